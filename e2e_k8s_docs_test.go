//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
)

// testKubernetesDocuments converts control plane cp's config (node name
// name) to Talos 1.14's shape, the Kubernetes settings as documents
// (issue 49), and applies it without a reboot: the node runs its part of
// the cluster from the documents. Its API server restarts as Talos 1.14's
// (the structured authentication config, probes) and serves; the node
// stays Ready. The Kubernetes CA rotation and upgrade-k8s that follow
// patch its documents, the other nodes' v1alpha1 fields.
func testKubernetesDocuments(t *testing.T, dc *dockerCluster, cp, name string) {
	cfg, err := configs.Decode([]byte(dc.okIn(t, "-n", cp, "read", "/var/lib/talosbox/state/config.yaml")))
	if err != nil {
		t.Fatal(err)
	}

	converted, err := generate.ToKubernetesDocuments(cfg)
	if err != nil {
		t.Fatal(err)
	}

	data, err := converted.Encode()
	if err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(t.TempDir(), "talos-1.14.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	start := time.Now()

	if out := dc.okIn(t, "-n", cp, "apply-config", "-f", file, "-m", "no-reboot"); !strings.Contains(out, "Applied configuration without a reboot") {
		t.Fatalf("apply-config: %s", out)
	}

	if mc := dc.okIn(t, "-n", cp, "get", "mc", "-o", "yaml"); !strings.Contains(mc, "kind: KubeAPIServerConfig") || !strings.Contains(mc, "kind: KubeletConfig") {
		t.Fatalf("the node's config has no Kubernetes documents:\n%s", mc)
	}

	waitFor(t, 8*time.Minute, cp+"'s API server from its documents", func() error {
		out, err := dc.kubectl("-n", "kube-system", "get", "pod", "kube-apiserver-"+name, "-o",
			"jsonpath={.spec.containers[0].command} {.spec.containers[0].startupProbe.httpGet.path} {.status.containerStatuses[0].ready}")

		switch {
		case err != nil:
			return fmt.Errorf("%v: %s", err, out)
		case !strings.Contains(out, "--authentication-config=") || strings.Contains(out, "--anonymous-auth"):
			return fmt.Errorf("not yet Talos 1.14's flags: %s", out)
		case !strings.Contains(out, " /livez ") || !strings.HasSuffix(out, "true"):
			return fmt.Errorf("no probes, or not ready: %s", out)
		}

		return nil
	})

	t.Logf("%s's API server served from its Kubernetes documents %s after the apply", cp, time.Since(start).Round(time.Second))

	// The API server answers through its own address, and the node,
	// whose kubelet and labels now come from documents, stays Ready with
	// its role.
	if out := dc.kube(t, "--server", "https://"+cp+":6443", "get", "--raw", "/readyz"); strings.TrimSpace(out) != "ok" {
		t.Errorf("readyz through %s: %s", cp, out)
	}

	waitFor(t, 3*time.Minute, name+" Ready with its role", func() error {
		out, err := dc.kubectl("get", "node", name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.metadata.labels.node-role\.kubernetes\.io/control-plane} {.spec.taints[*].key}`)
		if err != nil || !strings.HasPrefix(out, "True ") || !strings.Contains(out, "node-role.kubernetes.io/control-plane") {
			return fmt.Errorf("%v: %s", err, out)
		}

		return nil
	})
}
