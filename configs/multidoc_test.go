package configs_test

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// withDocs is a full config of testdata/full (its v1alpha1 document) with
// typed documents after it.
func withDocs(t *testing.T, base, docs string) []byte {
	t.Helper()

	data, err := os.ReadFile("testdata/full/" + base + ".yaml")
	if err != nil {
		t.Fatal(err)
	}

	return append(data, []byte("---\n"+docs)...)
}

// TestDocumentDecodeErrors: what is wrong with a document is said by
// name, line and path.
func TestDocumentDecodeErrors(t *testing.T) {
	t.Parallel()

	implemented := strings.Join(configs.ImplementedKinds(), ", ")

	for _, tc := range []struct {
		name, in, want string
	}{
		{
			name: "a Talos kind talosbox lacks",
			in:   "apiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://x\n",
			want: "line 2: document kind SideroLinkConfig (apiVersion v1alpha1) is a Talos config document talosbox does not implement yet; the kinds it implements are: " + implemented,
		},
		{
			name: "a typo",
			in:   "apiVersion: v1alpha1\nkind: HostnameConfg\nauto: stable\n",
			want: `line 2: unknown document kind "HostnameConfg" (did you mean "HostnameConfig"?); the kinds talosbox implements are: ` + implemented,
		},
		{
			name: "no apiVersion",
			in:   "kind: HostnameConfig\nauto: stable\n",
			want: "line 1: document kind HostnameConfig has no apiVersion: write apiVersion: v1alpha1",
		},
		{
			name: "another apiVersion",
			in:   "apiVersion: v1alpha2\nkind: HostnameConfig\nauto: stable\n",
			want: `line 1: apiVersion "v1alpha2" of document kind HostnameConfig is not one talosbox reads: write apiVersion: v1alpha1`,
		},
		{
			name: "a Kubernetes manifest",
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
			want: `line 2: apiVersion "v1", kind "Pod" is not a machine config document (their apiVersion is v1alpha1): a Kubernetes manifest goes in cluster.inlineManifests`,
		},
		{
			name: "an apiVersion without a kind",
			in:   "apiVersion: v1alpha1\nauto: stable\n",
			want: `line 1: a document with an apiVersion ("v1alpha1") but no kind: a typed config document names both (apiVersion: v1alpha1, kind: HostnameConfig ...), the v1alpha1 document neither (version: v1alpha1)`,
		},
		{
			name: "a document twice",
			in:   "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\n",
			want: "line 5: duplicate document HostnameConfig (the first starts on line 1): each kind appears once",
		},
		{
			name: "a named document twice",
			in: "apiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: ghcr.io\n---\n" +
				"apiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: ghcr.io\nendpoints: [{url: https://m}]\n",
			want: `line 5: duplicate document RegistryMirrorConfig "ghcr.io" (the first starts on line 1): each kind appears once per name`,
		},
		{
			name: "an unknown field",
			in:   "apiVersion: v1alpha1\nkind: HostnameConfig\nhostnam: a\n",
			want: `line 3: unknown field "hostnam" in HostnameConfig (did you mean "hostname"?)`,
		},
		{
			name: "a field of the wrong type, in a named document",
			in:   "apiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: ghcr.io\nendpoints: {url: x}\n",
			want: `line 4: RegistryMirrorConfig["ghcr.io"].endpoints: expected a sequence, got a mapping`,
		},
		{
			name: "a document that is a list",
			in:   "- apiVersion: v1alpha1\n",
			want: "line 1: a config document must be a mapping, got a sequence",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			_, err := configs.Decode([]byte(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestDocumentsFold: what documents say is in effect where the node reads
// it, and what was written is kept as written.
func TestDocumentsFold(t *testing.T) {
	t.Parallel()

	data := withDocs(t, "worker", "apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: node-1.example.com\n---\n"+
		"apiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: ghcr.io\nendpoints:\n  - url: https://mirror.example.com\n    overridePath: true\n---\n"+
		"apiVersion: v1alpha1\nkind: RegistryAuthConfig\nname: mirror.example.com\nusername: u\npassword: p4ss\n")

	cfg, err := configs.Decode(data)
	if err != nil {
		t.Fatal(err)
	}

	if got := cfg.Machine.Network.Hostname; got != "node-1.example.com" {
		t.Errorf("effective hostname %q", got)
	}

	if got := cfg.Machine.Registries.Mirrors["ghcr.io"]; !reflect.DeepEqual(got, configs.RegistryMirror{Endpoints: []string{"https://mirror.example.com"}, OverridePath: true}) {
		t.Errorf("effective mirror %+v", got)
	}

	if got := cfg.Machine.Registries.Config["mirror.example.com"].Auth; got == nil || got.Password != "p4ss" {
		t.Errorf("effective auth %+v", got)
	}

	if v1 := cfg.V1Alpha1(); v1.Machine.Network != nil && v1.Machine.Network.Hostname != "" {
		t.Errorf("the v1alpha1 document as written gained the hostname: %+v", v1.Machine.Network)
	}

	if h := configs.DocumentOf[*configs.HostnameConfig](cfg); h == nil || h.Hostname != "node-1.example.com" {
		t.Errorf("DocumentOf: %+v", h)
	}

	if _, err := cfg.Validate(configs.ModeContainer); err != nil {
		t.Errorf("validate: %v", err)
	}

	out, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	if strings.Count(string(out), "\n---\n") != 3 || !strings.Contains(string(out), "kind: RegistryAuthConfig\nname: mirror.example.com\n") {
		t.Errorf("encoding:\n%s", out)
	}

	again, err := configs.Decode(out)
	if err != nil || !configs.SameWritten(cfg, again) {
		t.Errorf("round trip: %v", err)
	}

	red, err := cfg.EncodeRedacted()
	if err != nil {
		t.Fatal(err)
	}

	if strings.Contains(string(red), "p4ss") || !strings.Contains(string(red), `password: "******"`) {
		t.Errorf("redacted:\n%s", red)
	}
}

// TestDocumentsValidate: a document's problems, and a setting made in two
// places, are located where they were written.
func TestDocumentsValidate(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, base, docs string
		want             []string
	}{
		{
			name: "a hostname too long",
			base: "worker",
			docs: "apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: " + strings.Repeat("a", 64) + "\n",
			want: []string{`line +3: HostnameConfig.hostname: invalid hostname "` + strings.Repeat("a", 64) + `": its label "aaaaaaaaaaaaaaaaaaaa..." is 64 characters long, the limit is 63`},
		},
		{
			name: "a hostname twice",
			base: "worker",
			docs: "apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: b\n",
			want: []string{"line +2: HostnameConfig: a static hostname is already set in the v1alpha1 document (machine.network.hostname): set it in one place (Talos refuses both)"},
		},
		{
			name: "auto and hostname",
			docs: "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\nhostname: b\n",
			want: []string{"line +4: HostnameConfig.hostname: auto and hostname cannot be set at the same time (a static hostname needs auto: off or no auto)"},
		},
		{
			name: "a v1alpha1 rule, broken through a document",
			docs: "apiVersion: v1alpha1\nkind: RegistryTLSConfig\nname: r.example.com\nca: not a certificate\n",
			want: []string{"line +4: RegistryTLSConfig[\"r.example.com\"].ca: ca must be a valid PEM-encoded certificate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			base := tc.base
			if base == "" {
				base = "minimal-controlplane"
			}

			data := withDocs(t, base, tc.docs)
			if tc.name == "a hostname twice" {
				data = []byte(strings.Replace(string(data), "\n    network:\n", "\n    network:\n        hostname: a\n", 1))
			}

			// "line +N" is the N-th line of the documents.
			offset := strings.Count(string(data[:strings.LastIndex(string(data), tc.docs)]), "\n")
			for i, w := range tc.want {
				var n int
				if _, err := fmt.Sscanf(w, "line +%d:", &n); err == nil {
					tc.want[i] = fmt.Sprintf("line %d:", n+offset) + w[strings.Index(w, ":")+1:]
				}
			}

			cfg, pos, err := configs.DecodeWithPositions(data)
			if err != nil {
				t.Fatal(err)
			}

			_, err = cfg.Validate(configs.ModeContainer, configs.WithPositions(pos))

			var got []string
			if list, ok := err.(*configs.Errors); ok { //nolint:errorlint // Validate returns *Errors itself
				for _, e := range list.List {
					got = append(got, e.Error())
				}
			}

			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestDocumentsOnly: a config of documents alone decodes, but a node
// needs its v1alpha1 document, and validation says so.
func TestDocumentsOnly(t *testing.T) {
	t.Parallel()

	cfg, err := configs.Decode([]byte("apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n"))
	if err != nil {
		t.Fatal(err)
	}

	if cfg.V1Alpha1() != nil {
		t.Error("a v1alpha1 document appeared")
	}

	out, err := cfg.Encode()
	if err != nil || string(out) != "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n" {
		t.Errorf("encode: %q %v", out, err)
	}

	_, err = cfg.Validate(configs.ModeContainer)
	if err == nil || !strings.Contains(err.Error(), "the config has no v1alpha1 document (version: v1alpha1): a node needs the machine section it holds (type, token, ca)") {
		t.Errorf("validate: %v", err)
	}
}

// TestDocumentsCompare: configs are compared by what is in effect; a
// setting moved into a document is no change, but is written differently.
func TestDocumentsCompare(t *testing.T) {
	t.Parallel()

	inV1, err := configs.Decode([]byte("version: v1alpha1\nmachine:\n  network:\n    hostname: a\n"))
	if err != nil {
		t.Fatal(err)
	}

	inDoc, err := configs.Decode([]byte("version: v1alpha1\nmachine: {}\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n"))
	if err != nil {
		t.Fatal(err)
	}

	changes, err := configs.Compare(inV1, inDoc)
	if err != nil || len(changes) != 0 {
		t.Errorf("moving the hostname into a document: changes %v, %v", changes, err)
	}

	if configs.SameWritten(inV1, inDoc) {
		t.Error("SameWritten says the two are written the same way")
	}

	renamed, err := configs.Decode([]byte("version: v1alpha1\nmachine: {}\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: b\n"))
	if err != nil {
		t.Fatal(err)
	}

	diff, err := configs.Diff(inDoc, renamed)
	if err != nil {
		t.Fatal(err)
	}

	// The effective field, named where it was written.
	if want := "~ HostnameConfig.hostname: \"a\" -> \"b\"\n"; diff != want {
		t.Errorf("diff:\n%s\nwant:\n%s", diff, want)
	}
}

// TestEditAndEncode: a change to a folded config's effective fields is
// refused by Encode (it would silently not be written); Edit changes
// what was written and folds the documents in again.
func TestEditAndEncode(t *testing.T) {
	t.Parallel()

	cfg, err := configs.Decode(withDocs(t, "worker", "apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n"))
	if err != nil {
		t.Fatal(err)
	}

	edited := cfg.Edit(func(v1 *configs.Config) { v1.Machine.Env = map[string]string{"K": "v"} })

	if edited.Machine.Env["K"] != "v" || edited.Machine.Network.Hostname != "a" {
		t.Errorf("effective after Edit: env %v, hostname %q", edited.Machine.Env, edited.Machine.Network.Hostname)
	}

	out, err := edited.Encode()
	if err != nil || !strings.Contains(string(out), "K: v") {
		t.Errorf("encode after Edit: %v\n%s", err, out)
	}

	if cfg.Machine.Env != nil {
		t.Error("Edit changed the original")
	}

	cfg.Machine.Env = map[string]string{"K": "v"}

	if _, err := cfg.Encode(); err == nil || !strings.Contains(err.Error(), "change V1Alpha1() or the documents instead") {
		t.Errorf("encode after changing the effective fields: %v", err)
	}
}
