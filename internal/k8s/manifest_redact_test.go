package k8s

import (
	"context"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// The bootstrap manifests reach a reader with the bootstrap token's secret
// masked (with it and the auto-approved node CSRs, a node credential can
// be had) and everything else as it is.
func TestManifestsRedactedForReaders(t *testing.T) {
	cp, _ := generated(t)
	id, secret, _ := strings.Cut(cp.Cluster.Token, ".")

	g := startGraphOf(t, t.TempDir(), &ManifestController{})
	g.setConfig(cp)

	var spec k8s.ManifestSpec

	g.wait("the bootstrap token's manifest", func() bool {
		m, err := bus.GetAs[*k8s.Manifest](context.Background(), g.store, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: k8s.ManifestType, ID: "00-kubelet-bootstrapping-token"})
		if err != nil {
			return false
		}

		spec = *m.TypedSpec()

		return true
	})

	plain, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(plain), secret) {
		t.Fatalf("the manifest an admin sees lacks the token's secret:\n%s", plain)
	}

	red, err := spec.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}

	if strings.Contains(string(red), secret) {
		t.Errorf("a reader sees the bootstrap token's secret:\n%s", red)
	}

	for _, want := range []string{"name: bootstrap-token-" + id, "token-secret: '******'", "type: bootstrap.kubernetes.io/token"} {
		if !strings.Contains(string(red), want) {
			t.Errorf("the redacted manifest lacks %q:\n%s", want, red)
		}
	}

	// Masking never touches the spec the bus holds.
	if again, _ := yaml.Marshal(spec); string(again) != string(plain) {
		t.Error("RedactedYAML changed the spec")
	}

	for _, d := range k8s.Definitions {
		if d.Type == k8s.ManifestType && !d.Sensitive {
			t.Errorf("%s is not sensitive: readers would get it whole", k8s.ManifestType)
		}
	}
}
