package configs_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// kubeletArgs is a v1alpha1 config whose machine.kubelet.extraArgs are
// the YAML lines given (indented under the key).
func kubeletArgs(lines string) []byte {
	var b strings.Builder

	b.WriteString("version: v1alpha1\nmachine:\n  type: worker\n  kubelet:\n    extraArgs:\n")

	for l := range strings.SplitSeq(strings.TrimSuffix(lines, "\n"), "\n") {
		b.WriteString("      " + l + "\n")
	}

	return []byte(b.String())
}

// TestArgsDecodeEncode: both forms Talos accepts decode, read as the flag
// given once or repeated in order, and encode back as they were written.
func TestArgsDecodeEncode(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, yaml string
		want       configs.ArgValue
		values     []string
		encoded    string // how the value is written back
	}{
		{"string", "v: \"2\"", configs.ArgString("2"), []string{"2"}, `v: "2"`},
		{"a number is its text", "v: 2", configs.ArgString("2"), []string{"2"}, `v: "2"`},
		{"a boolean is its text", "v: true", configs.ArgString("true"), []string{"true"}, `v: "true"`},
		{"null is the empty string", "v:", configs.ArgString(""), []string{""}, `v: ""`},
		{"empty string", "v: \"\"", configs.ArgString(""), []string{""}, `v: ""`},
		{"flow list", "v: [a=1, b=2]", configs.ArgList("a=1", "b=2"), []string{"a=1", "b=2"}, "v:\n    - a=1\n    - b=2"},
		{"block list", "v:\n  - a=1\n  - b=2", configs.ArgList("a=1", "b=2"), []string{"a=1", "b=2"}, "v:\n    - a=1\n    - b=2"},
		{"one-item list stays a list", "v: [a]", configs.ArgList("a"), []string{"a"}, "v:\n    - a"},
		{"empty list stays a list", "v: []", configs.ArgList(), []string{}, "v: []"},
		{"list items of other scalars", "v: [1, true, ~]", configs.ArgList("1", "true", ""), []string{"1", "true", ""}, "v:\n    - \"1\"\n    - \"true\"\n    - \"\""},
		{"anchors and aliases", "a: &x [p, q]\nb: *x", configs.ArgList("p", "q"), []string{"p", "q"}, "b:\n    - p\n    - q"},
		{"awkward strings in a list", "v: [\"\\n x\", \"a\\nb\"]", configs.ArgList("\n x", "a\nb"), []string{"\n x", "a\nb"}, `- "\n x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cfg, err := configs.Decode(kubeletArgs(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}

			args := cfg.Machine.Kubelet.ExtraArgs
			name := args.Names()[len(args)-1] // "v", or "b" beside the anchor

			if got := args[name]; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded %#v, want %#v", got, tc.want)
			}

			if got := args.Values(name); !slices.Equal(got, tc.values) || args[name].IsList() != (tc.want.List != nil) {
				t.Errorf("values %q (list %t), want %q", got, args[name].IsList(), tc.values)
			}

			out, err := cfg.Encode()
			if err != nil {
				t.Fatal(err)
			}

			if !strings.Contains(string(out), indent(tc.encoded, "            ")) {
				t.Errorf("encoded as\n%s\nwant it to hold\n%s", out, tc.encoded)
			}

			again, err := configs.Decode(out)
			if err != nil {
				t.Fatalf("decoding the encoded config: %v\n%s", err, out)
			}

			if !reflect.DeepEqual(again.Machine.Kubelet.ExtraArgs, args) || !configs.SameWritten(cfg, again) {
				t.Errorf("round trip changed the args: %#v, then %#v", args, again.Machine.Kubelet.ExtraArgs)
			}
		})
	}
}

// indent indents every line of s after the first, as the encoder nests
// extraArgs under machine.kubelet.
func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// TestArgsDecodeErrors: a value that is neither a string nor a list of
// strings is refused, at its line and path, saying what to write.
func TestArgsDecodeErrors(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a mapping", "v:\n  a: b",
			`line 7: machine.kubelet.extraArgs["v"]: want a string, or a list of strings for a repeated flag (--flag=a --flag=b), got a mapping`},
		{"a mapping in a list", "v:\n  - a\n  - {b: c}",
			`line 8: machine.kubelet.extraArgs["v"][1]: each item of a repeated flag's list is one value (one --flag=value), got a mapping`},
		{"a list in a list", "v: [a, [b, c]]",
			`line 6: machine.kubelet.extraArgs["v"][1]: each item of a repeated flag's list is one value (one --flag=value), got a sequence`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			_, err := configs.Decode(kubeletArgs(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestArgsAccessors: single values, repeats and absent flags as the
// readers of extraArgs see them.
func TestArgsAccessors(t *testing.T) {
	t.Parallel()

	a := configs.Args{"one": configs.ArgString("x"), "item": configs.ArgList("y"), "rep": configs.ArgList("a,b", "c"), "none": configs.ArgList()}

	for _, tc := range []struct {
		name   string
		get    string
		getOK  bool
		values []string
		joined string
	}{
		{"one", "x", true, []string{"x"}, "x"},
		{"item", "y", true, []string{"y"}, "y"},
		{"rep", "", false, []string{"a,b", "c"}, "a,b,c"},
		{"none", "", false, []string{}, ""},
		{"absent", "", false, nil, ""},
	} {
		got, ok := a.Get(tc.name)
		if got != tc.get || ok != tc.getOK || !slices.Equal(a.Values(tc.name), tc.values) || a.Joined(tc.name) != tc.joined || a.Has(tc.name) != (tc.name != "absent") {
			t.Errorf("%s: Get %q %t, Values %q, Joined %q, Has %t", tc.name, got, ok, a.Values(tc.name), a.Joined(tc.name), a.Has(tc.name))
		}
	}

	if names := a.Names(); !slices.Equal(names, []string{"item", "none", "one", "rep"}) {
		t.Errorf("names %q", names)
	}

	c := a.Clone()
	c["rep"].List[0] = "changed"
	c.Set("one", "z")

	if a["rep"].List[0] != "a,b" || a["one"].Value != "x" || !c["none"].IsList() {
		t.Errorf("the clone shares memory with the original, or lost the empty list: %#v", c)
	}

	if m := a.ToMap(); !reflect.DeepEqual(m, map[string][]string{"one": {"x"}, "item": {"y"}, "rep": {"a,b", "c"}, "none": {}}) {
		t.Errorf("ToMap %q", m)
	}

	if configs.Args(nil).Clone() != nil || configs.ArgsOf(nil) != nil || len(configs.Args(nil).Values("x")) != 0 {
		t.Error("nil Args do not read as empty")
	}
}

// TestArgValueResourceEncodings: resources carry extraArgs in YAML and
// JSON in the form they were written, and read them back.
func TestArgValueResourceEncodings(t *testing.T) {
	t.Parallel()

	a := configs.Args{"s": configs.ArgString("1"), "l": configs.ArgList("a", "b"), "e": configs.ArgList()}

	j, err := json.Marshal(a)
	if err != nil || string(j) != `{"e":[],"l":["a","b"],"s":"1"}` {
		t.Fatalf("JSON %s, %v", j, err)
	}

	var fromJSON configs.Args
	if err := json.Unmarshal(j, &fromJSON); err != nil || !reflect.DeepEqual(fromJSON, a) {
		t.Errorf("from JSON %#v, %v", fromJSON, err)
	}

	y, err := yaml.Marshal(a)
	if err != nil || string(y) != "e: []\nl:\n    - a\n    - b\ns: \"1\"\n" {
		t.Fatalf("YAML %q, %v", y, err)
	}

	var fromYAML configs.Args
	if err := yaml.Unmarshal(y, &fromYAML); err != nil || !reflect.DeepEqual(fromYAML, a) {
		t.Errorf("from YAML %#v, %v", fromYAML, err)
	}

	for _, bad := range []string{`{"x": {"a": 1}}`, `{"x": [1]}`, `{"x": 1}`} {
		var out configs.Args
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("JSON %s accepted: %#v", bad, out)
		}
	}

	for _, bad := range []string{"x: {a: 1}", "x: [[a]]"} {
		var out configs.Args
		if err := yaml.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("YAML %s accepted: %#v", bad, out)
		}
	}
}

// TestIsArgValue: the paths a strategic merge patch replaces whole are
// the values of extraArgs maps, in v1alpha1 and in the typed documents.
func TestIsArgValue(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		path []string
		want bool
	}{
		{[]string{"machine", "kubelet", "extraArgs", "node-labels"}, true},
		{[]string{"cluster", "apiServer", "extraArgs", "feature-gates"}, true},
		{[]string{"cluster", "controllerManager", "extraArgs", "controllers"}, true},
		{[]string{"cluster", "scheduler", "extraArgs", "v"}, true},
		{[]string{"cluster", "proxy", "extraArgs", "v"}, true},
		{[]string{"cluster", "etcd", "extraArgs", "feature-gates"}, true},
		{[]string{"KubeletConfig", "extraArgs", "v"}, true},
		{[]string{"KubeAPIServerConfig", "extraArgs", "v"}, true},
		{[]string{"KubeProxyConfig", "extraArgs", "v"}, true},
		{[]string{"machine", "kubelet", "extraArgs"}, false},
		{[]string{"machine", "kubelet", "extraArgs", "v", "x"}, false},
		{[]string{"cluster", "apiServer", "certSANs"}, false},
		{[]string{"cluster", "network", "cni", "flannel", "extraArgs"}, false},
		{[]string{"machine", "kubelet", "extraConfig", "v"}, false},
		{[]string{"machine", "env", "v"}, false},
		{[]string{"KubeFlannelCNIConfig", "extraArgs"}, false},
		{[]string{"NoSuchKind", "extraArgs", "v"}, false},
		{nil, false},
	} {
		if got := configs.IsArgValue(tc.path); got != tc.want {
			t.Errorf("%q: %t, want %t", tc.path, got, tc.want)
		}
	}
}
