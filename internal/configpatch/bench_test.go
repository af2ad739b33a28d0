package configpatch

import (
	"os"
	"strings"
	"testing"
)

const benchMerge = `machine:
  network:
    interfaces:
      - interface: eth1
        mtu: 9000
        vlans:
          - vlanId: 101
            mtu: 9000
      - interface: eth9
        dhcp: true
  files:
    - path: /var/etc/app/conf-3.toml
      content: "x"
  certSANs:
    - 10.5.0.3
cluster:
  apiServer:
    extraArgs:
      feature-gates: Foo=true
`

const benchJSON = `[
  {"op": "replace", "path": "/machine/kubelet/image", "value": "ghcr.io/siderolabs/kubelet:v1.30.1"},
  {"op": "add", "path": "/machine/certSANs/-", "value": "10.5.0.3"},
  {"op": "remove", "path": "/cluster/inlineManifests/0"}
]`

func benchApply(b *testing.B, patch string) {
	doc, err := os.ReadFile("testdata/controlplane.yaml")
	if err != nil {
		b.Fatal(err)
	}

	if n := strings.Count(string(doc), "\n"); n < 290 {
		b.Fatalf("fixture has %d lines, want about 300", n)
	}

	ps, err := Parse([]byte(patch))
	if err != nil {
		b.Fatal(err)
	}

	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()

	for b.Loop() {
		if _, err := Apply(doc, ps...); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApply(b *testing.B) {
	b.Run("strategic-merge", func(b *testing.B) { benchApply(b, benchMerge) })
	b.Run("json-patch", func(b *testing.B) { benchApply(b, benchJSON) })
}

// TestFixtureRoundTrip keeps the benchmark honest: an empty merge must give
// back the fixture unchanged, comments and all.
func TestFixtureRoundTrip(t *testing.T) {
	doc, err := os.ReadFile("testdata/controlplane.yaml")
	if err != nil {
		t.Fatal(err)
	}

	for _, patch := range []string{"{}", "[]"} {
		ps, err := Parse([]byte(patch))
		if err != nil {
			t.Fatal(err)
		}

		out, err := Apply(doc, ps...)
		if err != nil {
			t.Fatal(err)
		}

		if string(out) != string(doc) {
			t.Errorf("patch %s changed the fixture:\n%s", patch, out)
		}
	}
}
