package render_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

// TestRenderTalosShapes: configs of the shapes older Talos releases wrote
// (issue 49) validate, render in every mode, and the node does with them
// what Talos does.
func TestRenderTalosShapes(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name   string
		worker bool
		set    func(*configs.Config)
		check  func(*testing.T, *configs.Config, *render.Artifacts) // of a metal node
		warns  []string                                             // what Validate says of it, as Talos does
	}{
		{
			// Talos 1.3 to 1.7 workers have no cluster name.
			name: "worker without a cluster name", worker: true,
			set: func(c *configs.Config) { c.Cluster.ClusterName = "" },
			check: func(t *testing.T, c *configs.Config, _ *render.Artifacts) {
				if got := render.DefaultHostname(c); got != "talos-worker-1" {
					t.Errorf("DefaultHostname = %q, want talos-worker-1", got)
				}
			},
		},
		{
			// Talos takes a bare address as a host prefix.
			name: "interface address without a prefix length", worker: true,
			set: func(c *configs.Config) {
				c.Machine.Network = &configs.NetworkConfig{Interfaces: []configs.Device{
					{Interface: "eth0", Addresses: []string{"192.0.2.10", "2001:db8::10"}},
				}}
			},
			check: func(t *testing.T, c *configs.Config, _ *render.Artifacts) {
				want := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")}
				if got := render.DefaultNodeIPs(c); !slices.Equal(got, want) {
					t.Errorf("DefaultNodeIPs = %v, want %v", got, want)
				}
			},
		},
		{
			// Talos before v0.9 called workers "join"; Talos still does.
			name: "machine type join", worker: true,
			set: func(c *configs.Config) { c.Machine.Type = "join" },
			check: func(t *testing.T, c *configs.Config, _ *render.Artifacts) {
				if c.IsControlPlane() || render.DefaultHostname(c) != "demo-worker-1" {
					t.Errorf("a join node is a worker: control plane %t, hostname %q", c.IsControlPlane(), render.DefaultHostname(c))
				}
			},
			warns: []string{`machine.type: use "worker" instead of "join" for machine type`},
		},
		{
			// Kubernetes 1.34's Service IP allocator has no /12 limit.
			name: "service subnet larger than /12",
			set:  func(c *configs.Config) { c.Cluster.Network.ServiceSubnets = []string{"10.64.0.0/10"} },
			check: func(t *testing.T, _ *configs.Config, arts *render.Artifacts) {
				if got := file(t, arts, "static-pods/kube-apiserver.yaml"); !strings.Contains(got, "--service-cluster-ip-range=10.64.0.0/10") {
					t.Errorf("kube-apiserver is not given the range:\n%s", got)
				}

				if got := file(t, arts, "manifests/11-core-dns-svc.yaml"); !strings.Contains(got, `clusterIP: "10.64.0.10"`) {
					t.Errorf("CoreDNS's Service is not at the range's 10th address:\n%s", got)
				}
			},
		},
		{
			// Talos accepts a trailing dot (and capitals); the node renders
			// the plain name: the kubelet would write search domains ending
			// in a dot, and no certificate name matches one.
			name: "DNS domain with a trailing dot",
			set:  func(c *configs.Config) { c.Cluster.Network.DNSDomain = "Cluster.Local." },
			check: func(t *testing.T, _ *configs.Config, arts *render.Artifacts) {
				if got := file(t, arts, "fs/etc/kubernetes/kubelet.yaml"); !strings.Contains(got, "clusterDomain: cluster.local\n") {
					t.Errorf("kubelet's clusterDomain is not cluster.local:\n%s", got)
				}

				if got := file(t, arts, "manifests/11-core-dns.yaml"); !strings.Contains(got, "kubernetes cluster.local in-addr.arpa") {
					t.Errorf("CoreDNS does not serve cluster.local:\n%s", got)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cfg, worker := gen(t)
			if tc.worker {
				cfg = worker
			}

			// The change is made to the v1alpha1 document as written
			// (gen config's has documents besides it).
			tc.set(cfg.V1Alpha1())
			cfg = reread(t, cfg)

			var metal *render.Artifacts

			for _, mode := range modes {
				if warnings, err := cfg.Validate(mode); err != nil || !slices.Equal(warnings, tc.warns) {
					t.Fatalf("%s: refused: %v, warnings %q (want %q)", mode, err, warnings, tc.warns)
				}

				if arts := mustRender(t, cfg, render.Options{Mode: mode}); mode == configs.ModeMetal {
					metal = arts
				}

				if err := render.Check(cfg, mode); err != nil {
					t.Fatalf("%s: Check: %v", mode, err)
				}
			}

			tc.check(t, cfg, metal)
		})
	}
}
