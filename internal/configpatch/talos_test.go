package configpatch_test

import (
	"os"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/configpatch"
)

const talosPatcher = "../../configs/testdata/talos/patcher/multidoc/"

// TestTalosMultiDocumentPatches: Talos's own test of patches addressed to
// documents (configpatcher's TestApplyMultiDoc): strategic merge patches
// merge into the document of their kind and name and add the ones the
// config lacks; a delete of a missing document does nothing. Talos's
// expected output also spells out the v1alpha1 fields its encoder
// writes; here the text is patched, so the comparison is of what the
// documents hold.
func TestTalosMultiDocumentPatches(t *testing.T) {
	var args []string
	for _, f := range []string{"strategic1.yaml", "strategic2.yaml", "strategic3.yaml"} {
		args = append(args, "@"+talosPatcher+f)
	}

	patches, err := configpatch.LoadAll(args)
	if err != nil {
		t.Fatal(err)
	}

	config, err := os.ReadFile(talosPatcher + "config.yaml")
	if err != nil {
		t.Fatal(err)
	}

	got, err := configpatch.Apply(config, patches...)
	if err != nil {
		t.Fatal(err)
	}

	want := `version: v1alpha1
machine:
  network:
    hostname: hostname1
    interfaces:
      - interface: eth0
        dhcp: false
---
apiVersion: v1alpha1
kind: SideroLinkConfig
apiUrl: https://siderolink.api/join?jointoken=secret&user=bob
---
apiVersion: v1alpha1
kind: ExtensionServiceConfig
name: foo
configFiles:
  - content: hello world
    mountPath: /etc/foo
  - content: another hello
    mountPath: /etc/bar
environment:
  - FOO=BAR
  - XXX=YYY
`
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestJSONPatchAddressesDocuments: beyond Talos (which refuses JSON
// patches on multi-document configs), a JSON patch reaches a typed
// document by its kind (and name), adds and removes whole documents, and
// still patches the v1alpha1 document by its own paths.
func TestJSONPatchAddressesDocuments(t *testing.T) {
	const config = `version: v1alpha1
machine:
    type: worker # a comment kept
---
apiVersion: v1alpha1
kind: HostnameConfig
hostname: a
---
apiVersion: v1alpha1
kind: RegistryMirrorConfig
name: ghcr.io
endpoints:
    - url: https://m1
`

	for _, tc := range []struct {
		name, patch, want, wantErr string
	}{
		{
			name:  "a field of an unnamed document",
			patch: `[{"op": "replace", "path": "/HostnameConfig/hostname", "value": "b"}]`,
			want:  strings.Replace(config, "hostname: a", "hostname: b", 1),
		},
		{
			name:  "a field of a named document",
			patch: `[{"op": "add", "path": "/RegistryMirrorConfig/ghcr.io/endpoints/-", "value": {"url": "https://m2"}}]`,
			want:  config + "    - url: https://m2\n",
		},
		{
			name:  "the v1alpha1 document, beside documents",
			patch: `[{"op": "replace", "path": "/machine/type", "value": "controlplane"}]`,
			want:  strings.Replace(config, "type: worker", "type: controlplane", 1),
		},
		{
			name:  "a document removed",
			patch: `[{"op": "remove", "path": "/HostnameConfig"}]`,
			want:  strings.Replace(config, "---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n", "", 1),
		},
		{
			name:  "a named document added",
			patch: `[{"op": "add", "path": "/RegistryMirrorConfig/docker.io", "value": {"endpoints": [{"url": "https://m3"}]}}]`,
			want:  config + "---\napiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: docker.io\nendpoints:\n    - url: https://m3\n",
		},
		{
			name:    "a path into a document that is not there",
			patch:   `[{"op": "replace", "path": "/ResolverConfig/nameservers", "value": []}]`,
			wantErr: "json patch: op 1 (replace /ResolverConfig/nameservers): path not found",
		},
		{
			name:    "a document that is not a mapping",
			patch:   `[{"op": "replace", "path": "/HostnameConfig", "value": "x"}]`,
			wantErr: "json patch: /HostnameConfig is a document: want a mapping, got a scalar",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := configpatch.Parse([]byte(tc.patch))
			if err != nil {
				t.Fatal(err)
			}

			got, err := configpatch.Apply([]byte(config), ps...)

			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v, want %s", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case string(got) != tc.want:
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestStrategicMergeDeletesDocument: a patch document of only its
// identity and `$patch: delete` removes the document, as in Talos.
func TestStrategicMergeDeletesDocument(t *testing.T) {
	config := "version: v1alpha1\n---\napiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: a\n---\napiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: b\n"

	ps, err := configpatch.Parse([]byte("apiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: a\n$patch: delete\n"))
	if err != nil {
		t.Fatal(err)
	}

	got, err := configpatch.Apply([]byte(config), ps...)
	if err != nil {
		t.Fatal(err)
	}

	if want := "version: v1alpha1\n---\napiVersion: v1alpha1\nkind: RegistryMirrorConfig\nname: b\n"; string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
