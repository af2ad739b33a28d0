package mgmt

import (
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
	"github.com/talosbox/talosbox/internal/provision"
)

func TestParseForcedEndpoint(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		in                 string
		talos, server, san string
		err                string
	}{
		{in: "10.5.0.50", talos: "10.5.0.50", server: "https://10.5.0.50:6443", san: "10.5.0.50"},
		{in: "k8s.example.com", talos: "k8s.example.com", server: "https://k8s.example.com:6443", san: "k8s.example.com"},
		{in: "127.0.0.1:51000", talos: "127.0.0.1:51000", server: "https://127.0.0.1:6443", san: "127.0.0.1"},
		{in: "[fd00::5]", talos: "[fd00::5]", server: "https://[fd00::5]:6443", san: "fd00::5"},
		{in: "[fd00::5]:50000", talos: "[fd00::5]:50000", server: "https://[fd00::5]:6443", san: "fd00::5"},
		{in: "https://lb.example.com:443", talos: "lb.example.com", server: "https://lb.example.com:443", san: "lb.example.com"},
		{in: "https://[fd00::5]:7443/", talos: "[fd00::5]", server: "https://[fd00::5]:7443", san: "fd00::5"},
		{in: "", err: "not an address"},
		{in: "a b", err: "not an address"},
		{in: "10.5.0.50:99999", err: `port "99999"`},
		{in: "http://lb:6443", err: "over https"},
		{in: "https://lb:6443/api", err: "no path"},
		{in: "-bad-.example", err: "neither an IP address nor a host name"},
		{in: "under_score", err: "neither an IP address nor a host name"},
	} {
		got, err := parseForcedEndpoint(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
			}

			continue
		}

		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}

		if got.Talos != tc.talos || got.Server != tc.server || got.Host != tc.san {
			t.Errorf("%q: %+v, want talos %q server %q SAN %q", tc.in, got, tc.talos, tc.server, tc.san)
		}
	}
}

// --endpoint names the endpoint in both certificates, and leaves the
// cluster's own endpoint (what the nodes join through) alone, as in Talos.
func TestClusterForcedEndpoint(t *testing.T) {
	t.Parallel()

	f := &clusterCreateFlags{endpoint: "k8s.example.com"}

	for _, n := range generateNodes(t, f) {
		cfg, err := configs.Decode(n.config)
		if err != nil {
			t.Fatal(err)
		}

		if got := cfg.Cluster.ControlPlane.Endpoint; got != "https://10.5.0.2:6443" {
			t.Errorf("%s: the cluster endpoint became %s", n.name, got)
		}

		if !slices.Contains(cfg.Machine.CertSANs, "k8s.example.com") {
			t.Errorf("%s: the OS API's SANs %v lack the endpoint", n.name, cfg.Machine.CertSANs)
		}

		if n.typ == provision.TypeControlPlane && !slices.Contains(cfg.Cluster.APIServer.CertSANs, "k8s.example.com") {
			t.Errorf("%s: the API server's SANs %v lack the endpoint", n.name, cfg.Cluster.APIServer.CertSANs)
		}
	}

	if f.kubeServer() != "https://k8s.example.com:6443" {
		t.Errorf("kubeconfig server %q", f.kubeServer())
	}

	bad := &clusterCreateFlags{endpoint: "http://x", name: "x", provisioner: "docker", subnet: defaultSubnet, controlPlanes: 1}
	if _, _, err := bad.plan(); err == nil || !strings.Contains(err.Error(), "--endpoint") {
		t.Errorf("plan with a bad --endpoint: %v", err)
	}
}

func TestPointKubeconfig(t *testing.T) {
	t.Parallel()

	in := []byte(`apiVersion: v1
kind: Config
clusters:
  - name: talos
    cluster:
      server: https://10.5.0.2:6443
      certificate-authority-data: Q0E=
users:
  - name: admin@talos
    user: {client-key-data: S0VZ}
contexts:
  - name: admin@talos
    context: {cluster: talos, user: admin@talos}
current-context: admin@talos
`)

	out, err := pointKubeconfig(in, "https://k8s.example.com:6443")
	if err != nil {
		t.Fatal(err)
	}

	k, err := kubernetes.ParseKubeconfig(out, "out")
	if err != nil {
		t.Fatal(err)
	}

	if got := k.Clusters["talos"].Server; got != "https://k8s.example.com:6443" {
		t.Errorf("server %v", got)
	}

	for _, keep := range []string{"certificate-authority-data: Q0E=", "client-key-data: S0VZ", "current-context: admin@talos"} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("lost %q:\n%s", keep, out)
		}
	}

	if _, err := pointKubeconfig([]byte("clusters: [: nope"), "https://a:1"); err == nil {
		t.Error("a kubeconfig that does not parse was accepted")
	}
}
