package global

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

const nodeKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: https://10.5.0.2:6443
users:
- name: admin@lab
  user:
    client-certificate-data: Y2VydA==
contexts:
- name: admin@lab
  context:
    cluster: lab
    namespace: default
    user: admin@lab
current-context: admin@lab
`

func TestKubeconfigMerge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")

	var out bytes.Buffer

	// A new file is written whole, 0600.
	if err := WriteKubeconfig(&out, path, []byte(nodeKubeconfig), true, false); err != nil {
		t.Fatal(err)
	}

	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi, err)
	}

	// The same cluster again keeps the first and adds a numbered one.
	if err := WriteKubeconfig(&out, path, []byte(strings.ReplaceAll(nodeKubeconfig, "10.5.0.2", "10.5.0.3")), true, false); err != nil {
		t.Fatal(err)
	}

	k := readKubeconfig(t, path)
	if len(k.Contexts) != 2 || k.CurrentContext != "admin@lab-1" || len(k.Clusters) != 2 {
		t.Fatalf("merged: %+v", k)
	}

	if ctx := k.Contexts["admin@lab-1"]; ctx.Cluster != "lab-1" || ctx.AuthInfo != "admin@lab-1" {
		t.Errorf("the renamed context points at its own cluster and user: %v", ctx)
	}

	if !strings.Contains(out.String(), `renamed "admin@lab" to "admin@lab-1"`) {
		t.Errorf("output: %s", out.String())
	}

	// --force replaces in place.
	if err := WriteKubeconfig(&out, path, []byte(strings.ReplaceAll(nodeKubeconfig, "10.5.0.2", "10.5.0.9")), true, true); err != nil {
		t.Fatal(err)
	}

	k = readKubeconfig(t, path)
	if len(k.Clusters) != 2 || k.Clusters["lab"].Server != "https://10.5.0.9:6443" || k.CurrentContext != "admin@lab" {
		t.Errorf("forced: %+v", k)
	}

	// Without merging, an existing file needs --force.
	if err := WriteKubeconfig(&out, path, []byte(nodeKubeconfig), false, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("overwrite without --force: %v", err)
	}

	// A file that is not a kubeconfig is not merged into (nor lost).
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("clusters: [: nope"), 0o600) //nolint:errcheck // the read below tells

	if err := WriteKubeconfig(&out, bad, []byte(nodeKubeconfig), true, false); err == nil || !strings.Contains(err.Error(), "not a kubeconfig") {
		t.Errorf("bad file: %v", err)
	}

	if b, _ := os.ReadFile(bad); string(b) != "clusters: [: nope" {
		t.Error("the bad file was changed")
	}
}

func readKubeconfig(t *testing.T, path string) *kubernetes.Kubeconfig {
	t.Helper()

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	k, err := kubernetes.ParseKubeconfig(data, path)
	if err != nil {
		t.Fatal(err)
	}

	return k
}
