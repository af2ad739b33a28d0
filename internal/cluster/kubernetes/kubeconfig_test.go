package kubernetes_test

import (
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

func parse(t *testing.T, data string) *kubernetes.Kubeconfig {
	t.Helper()

	k, err := kubernetes.ParseKubeconfig([]byte(data), "test")
	if err != nil {
		t.Fatal(err)
	}

	return k
}

func TestMergeKubeconfig(t *testing.T) {
	cur := parse(t, nodeKubeconfig)

	// The same names again: the new entries get numbered names and the new
	// context points at its own cluster and user.
	renamed := kubernetes.MergeKubeconfig(cur, parse(t, strings.ReplaceAll(nodeKubeconfig, "10.5.0.2", "10.5.0.3")), false)
	if renamed["admin@lab"] != "admin@lab-1" || len(renamed) != 1 {
		t.Errorf("renamed: %v", renamed)
	}

	if cur.CurrentContext != "admin@lab-1" || len(cur.Contexts) != 2 || len(cur.Clusters) != 2 || len(cur.AuthInfos) != 2 {
		t.Fatalf("merged: %+v", cur)
	}

	if c := cur.Contexts["admin@lab-1"]; c.Cluster != "lab-1" || c.AuthInfo != "admin@lab-1" || c.Namespace != "default" {
		t.Errorf("renamed context: %+v", c)
	}

	if cur.Clusters["lab"].Server != "https://10.5.0.2:6443" || cur.Clusters["lab-1"].Server != "https://10.5.0.3:6443" {
		t.Errorf("clusters: lab %s, lab-1 %s", cur.Clusters["lab"].Server, cur.Clusters["lab-1"].Server)
	}

	// A third copy takes the next free number.
	kubernetes.MergeKubeconfig(cur, parse(t, nodeKubeconfig), false)

	if cur.CurrentContext != "admin@lab-2" {
		t.Errorf("third merge: current %q", cur.CurrentContext)
	}

	// With force the entry is replaced in place.
	renamed = kubernetes.MergeKubeconfig(cur, parse(t, strings.ReplaceAll(nodeKubeconfig, "10.5.0.2", "10.5.0.9")), true)
	if len(renamed) != 0 || cur.CurrentContext != "admin@lab" || cur.Clusters["lab"].Server != "https://10.5.0.9:6443" || len(cur.Clusters) != 3 {
		t.Errorf("forced: renamed %v, current %q, lab %s, %d clusters", renamed, cur.CurrentContext, cur.Clusters["lab"].Server, len(cur.Clusters))
	}

	// An empty file takes the new one whole.
	empty := parse(t, "")
	kubernetes.MergeKubeconfig(empty, parse(t, nodeKubeconfig), false)

	if empty.CurrentContext != "admin@lab" || len(empty.Clusters) != 1 {
		t.Errorf("into an empty file: %+v", empty)
	}

	// What it writes reads back the same.
	data, err := kubernetes.MarshalKubeconfig(cur)
	if err != nil {
		t.Fatal(err)
	}

	if back := parse(t, string(data)); back.CurrentContext != cur.CurrentContext || len(back.Contexts) != 3 || string(back.AuthInfos["admin@lab"].ClientCertificateData) != "cert" {
		t.Errorf("round trip: %s", data)
	}
}

func TestRenameCurrentContext(t *testing.T) {
	k := parse(t, nodeKubeconfig)
	kubernetes.RenameCurrentContext(k, "lab-admin")

	if _, old := k.Contexts["admin@lab"]; old || k.Contexts["lab-admin"].Cluster != "lab" || k.CurrentContext != "lab-admin" {
		t.Errorf("renamed: %+v", k)
	}
}

func TestParseKubeconfigRefusesGarbage(t *testing.T) {
	if _, err := kubernetes.ParseKubeconfig([]byte("clusters: [: nope"), "/tmp/x"); err == nil || !strings.Contains(err.Error(), "/tmp/x: not a kubeconfig") {
		t.Errorf("garbage: %v", err)
	}
}
