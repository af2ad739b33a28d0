package configpatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJSONPatch(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  func(t *testing.T) string
	}{
		{
			name:  "replace keeps comments, order and untouched spellings",
			patch: `[{"op": "replace", "path": "/machine/type", "value": "worker"}, {"op": "replace", "path": "/version", "value": "v1alpha2"}]`,
			want: func(t *testing.T) string {
				return replaceLines(t, base, "type: controlplane", "type: worker", "version: v1alpha1 #", "version: v1alpha2 #")
			},
		},
		{
			name:  "add object and append to array",
			patch: `[{"op": "add", "path": "/cluster/serviceAccount", "value": {"key": "LS0t"}}, {"op": "add", "path": "/machine/certSANs/-", "value": "10.0.0.2"}]`,
			want: func(t *testing.T) string {
				return replaceLines(t, base,
					"        dnsDomain: cluster.local\n", "        dnsDomain: cluster.local\n    serviceAccount:\n        key: LS0t\n",
					"        - 10.0.0.1\n", "        - 10.0.0.1\n        - 10.0.0.2\n")
			},
		},
		{
			name:  "remove",
			patch: `[{"op": "remove", "path": "/machine/network/interfaces/0/vlans"}, {"op": "remove", "path": "/debug"}]`,
			want: func(t *testing.T) string {
				return replaceLines(t, base, "debug: false\n", "",
					"              vlans:\n                - vlanId: 10\n                  mtu: 1500\n", "")
			},
		},
		{
			name:  "move and copy",
			patch: `[{"op": "move", "from": "/machine/network/hostname", "path": "/machine/hostname"}, {"op": "copy", "from": "/cluster/clusterName", "path": "/cluster/name"}]`,
			want: func(t *testing.T) string {
				return replaceLines(t, base, "        hostname: node-1\n", "",
					"              mtu: 1500\ncluster:\n", "              mtu: 1500\n    hostname: node-1\ncluster:\n",
					"        dnsDomain: cluster.local\n", "        dnsDomain: cluster.local\n    name: demo\n")
			},
		},
		{
			name:  "test guards a change",
			patch: "- op: test\n  path: /machine/files/0/permissions\n  value: 420\n- op: replace\n  path: /machine/files/0/op\n  value: overwrite\n",
			want: func(t *testing.T) string {
				return replaceLines(t, base, "op: create", "op: overwrite")
			},
		},
		{
			name:  "value types survive",
			patch: `[{"op": "add", "path": "/machine/x", "value": {"s": "true", "n": 1.5, "i": 7, "b": false, "z": null, "l": ["0x1"]}}]`,
			want: func(t *testing.T) string {
				return replaceLines(t, base, "              mtu: 1500\ncluster:\n",
					"              mtu: 1500\n    x:\n        s: \"true\"\n        n: 1.5\n        i: 7\n        b: false\n        z: null\n        l:\n            - \"0x1\"\ncluster:\n")
			},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustApply(t, base, tt.patch)
			if want := tt.want(t); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestPatchErrors(t *testing.T) {
	tests := []struct {
		name, doc, patch, want string
	}{
		{"replace missing path", base, `[{"op": "replace", "path": "/machine/foo", "value": 1}]`,
			"json patch: op 1 (replace /machine/foo): path not found"},
		{"second op fails", base, `[{"op": "add", "path": "/a", "value": 1}, {"op": "remove", "path": "/machine/nope/x"}]`,
			"json patch: op 2 (remove /machine/nope/x): path not found"},
		{"test fails", base, `[{"op": "test", "path": "/machine/type", "value": "worker"}]`,
			"json patch: op 1 (test /machine/type): test failed: value differs"},
		{"bad index", base, `[{"op": "add", "path": "/machine/certSANs/7", "value": "x"}]`,
			"json patch: op 1 (add /machine/certSANs/7): invalid array index"},
		{"move from missing", base, `[{"op": "move", "from": "/nope", "path": "/x"}]`,
			"json patch: op 1 (move /nope -> /x): path not found"},
		{"unknown op", base, `[{"op": "merge", "path": "/x"}]`, "json patch: op 1 (line 1): unknown op \"merge\""},
		{"missing value", base, `[{"op": "add", "path": "/x"}]`, "json patch: op 1 (line 1): add: missing \"value\""},
		{"missing from", base, "- op: copy\n  path: /x\n", "json patch: op 1 (line 1): copy: missing \"from\""},
		{"relative path", base, `[{"op": "remove", "path": "machine"}]`, "json patch: op 1 (line 1): remove: path \"machine\" must be empty or start with \"/\""},
		{"scalar patch", base, "just text", "line 1: want a mapping (strategic merge) or a list (JSON patch), got a scalar"},
		{"json patch among documents", base, "a: 1\n---\n- op: remove\n  path: /a\n", "a JSON patch must be the only document"},
		{"unknown directive", base, "machine:\n  network:\n    $patch: replace\n", "strategic merge: machine.network (line 3 of the patch): unsupported $patch value \"replace\""},
		{"delete root", base, "$patch: delete\n", "cannot remove the whole v1alpha1 document"},
		{"delete item of appended list", base, "machine:\n  certSANs:\n    - a: 1\n      $patch: delete\n",
			"strategic merge: machine.certSANs (line 3 of the patch): $patch: delete needs a list item identified by a merge key"},
		{"list config", "- a\n", "a: 1\n", "parse config: line 1: a machine config document must be a mapping, got a list"},
		{"multi-document config", base + "---\na: 1\n", "a: 1\n", "line 33: a second v1alpha1 document (one without a kind)"},
		{"malformed config", "a: [\n", "a: 1\n", "parse config: yaml: line 1"},
		{"malformed patch", base, "a: b: c\n", "parse patch: yaml: mapping values are not allowed"},
		{"empty patch", base, "---\n", "patch is empty"},
		{"config with .inf", "a: .inf\n", `[{"op": "add", "path": "/b", "value": 1}]`, "line 1: \".inf\" has no JSON representation"},
		{"merge keys", "x: &x {a: 1}\ny:\n  <<: *x\n", `[{"op": "remove", "path": "/x"}]`, "line 3: YAML merge keys (<<) are not supported"},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n" +
			"g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n", "a: 1\n", "too large or too deep"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := Parse([]byte(tt.patch))
			if err == nil {
				_, err = Apply([]byte(tt.doc), ps...)
			}

			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()

	files := map[string]string{
		"multi.yaml": "machine:\n  type: worker\n---\nmachine:\n  network:\n    hostname: n2\n",
		"json.json":  `[{"op": "add", "path": "/machine/kubelet", "value": {"image": "k"}}]`,
		"bad.yaml":   "- op: nope\n",
	}

	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	ps, err := LoadAll([]string{
		"@" + filepath.Join(dir, "multi.yaml"),
		"@" + filepath.Join(dir, "json.json"),
		`{"cluster": {"clusterName": "renamed"}}`,
	})
	if err != nil {
		t.Fatal(err)
	}

	kinds := make([]bool, len(ps))
	for i, p := range ps {
		kinds[i] = p.IsJSONPatch()
	}

	if len(ps) != 4 || kinds[0] || kinds[1] || !kinds[2] || kinds[3] {
		t.Fatalf("patches = %v", ps)
	}

	if got := ps[2].String(); got != "json patch @"+filepath.Join(dir, "json.json") {
		t.Errorf("String() = %q", got)
	}

	out, err := Apply([]byte(base), ps...)
	if err != nil {
		t.Fatal(err)
	}

	want := replaceLines(t, base,
		"type: controlplane", "type: worker",
		"hostname: node-1", "hostname: n2",
		"clusterName: demo", "clusterName: renamed",
		"              mtu: 1500\ncluster:\n", "              mtu: 1500\n    kubelet:\n        image: k\ncluster:\n")
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}

	for arg, wantErr := range map[string]string{
		"@" + filepath.Join(dir, "missing.yaml"): "read patch: open",
		"@" + filepath.Join(dir, "bad.yaml"):     "patch @" + filepath.Join(dir, "bad.yaml") + ": json patch: op 1 (line 1): unknown op \"nope\"",
		"[":                                      "inline patch: parse patch: yaml:",
	} {
		if _, err := Load(arg); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Load(%q) error = %v, want %q", arg, err, wantErr)
		}
	}

	// A failing file patch is named in the error of Apply.
	fail, err := Load("@" + filepath.Join(dir, "json.json"))
	if err != nil {
		t.Fatal(err)
	}

	_, err = Apply([]byte("a: 1\n"), fail...)
	if err == nil || !strings.Contains(err.Error(), "patch 1 (json patch @"+filepath.Join(dir, "json.json")+"): json patch: op 1 (add /machine/kubelet): path not found") {
		t.Errorf("Apply error = %v", err)
	}
}

func TestMergeAfterJSONPatchReplacedRoot(t *testing.T) {
	toList, err := Parse([]byte(`[{"op": "replace", "path": "", "value": [1]}]`))
	if err != nil {
		t.Fatal(err)
	}

	merge, err := Parse([]byte("a: 1\n"))
	if err != nil {
		t.Fatal(err)
	}

	_, err = Apply([]byte("a: 1\n"), append(toList, merge...)...)
	if err == nil || !strings.Contains(err.Error(), "patch 2 (strategic merge patch): strategic merge: document root (line 1 of the patch): cannot merge a mapping into a list") {
		t.Fatalf("error = %v", err)
	}
}
