package k8s

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/k8s/secrets"
)

// The CNI's addresses (pod network) and service IPs never reach the
// apiserver's SANs: they appear after the apiserver started.
func TestWithoutClusterNetworks(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("10.5.0.2"), netip.MustParseAddr("10.244.0.0"), netip.MustParseAddr("10.244.0.1"),
		netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00::2")}

	for _, tc := range []struct {
		name string
		net  *configs.ClusterNetworkConfig
		want []string
	}{
		{"defaults", nil, []string{"10.5.0.2", "fd00::2"}},
		{"custom pods", &configs.ClusterNetworkConfig{PodSubnets: []string{"10.5.0.0/24"}}, []string{"10.244.0.0", "10.244.0.1", "fd00::2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &configs.Config{Cluster: &configs.ClusterConfig{ClusterName: "c",
				ControlPlane: &configs.ControlPlaneConfig{Endpoint: "https://10.5.0.2:6443"}, Network: tc.net}}

			var got []string
			for _, a := range withoutClusterNetworks(cfg, addrs) {
				got = append(got, a.String())
			}

			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	// A shared IP is there whether the node holds it or not, so that
	// winning the election does not reissue the certificate (and restart
	// the API server as it takes the endpoint over: a 39 s outage).
	cfg := &configs.Config{
		Machine: &configs.MachineConfig{Network: &configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0", VIP: &configs.VIPConfig{IP: "10.5.0.50"}}}}},
		Cluster: &configs.ClusterConfig{ClusterName: "c", ControlPlane: &configs.ControlPlaneConfig{Endpoint: "https://10.5.0.50:6443"}},
	}
	held := withoutClusterNetworks(cfg, []netip.Addr{netip.MustParseAddr("10.5.0.2"), netip.MustParseAddr("10.5.0.50")})
	notHeld := withoutClusterNetworks(cfg, []netip.Addr{netip.MustParseAddr("10.5.0.2")})

	if !slices.Equal(held, notHeld) || len(held) != 2 {
		t.Errorf("with the shared IP held: %v; without: %v; want the same two", held, notHeld)
	}
}

// TestCertsKey: the certificates are reissued (and every control-plane pod
// restarted) only when what they are made from changes, never because an
// apply decoded the same values into new pointers or changed a component's
// image.
func TestCertsKey(t *testing.T) {
	cp, _ := generated(t)
	addrs := []netip.Addr{netip.MustParseAddr("10.5.0.2")}

	key := func(cfg *configs.Config) string {
		t.Helper()

		in, err := secrets.FromConfig(cfg, "cp-1", "cp-1", addrs)
		if err != nil {
			t.Fatal(err)
		}

		k, err := certsKey(cfg, "cp-1", "cp-1", addrs, in)
		if err != nil {
			t.Fatal(err)
		}

		return k
	}

	base := key(cp)

	if k := key(reDecode(t, cp)); k != base {
		t.Error("the same config decoded again changes the key")
	}

	sched := reDecode(t, cp)
	sched.Cluster.Scheduler.Image = "registry.k8s.io/kube-scheduler:v1.33.13"

	if k := key(sched); k != base {
		t.Error("a scheduler image changes the key")
	}

	etcd := reDecode(t, cp)
	other, _ := generated(t)
	etcd.Cluster.Etcd.CA = other.Cluster.Etcd.CA

	if k := key(etcd); k == base {
		t.Error("another etcd CA leaves the key")
	}

	sans := reDecode(t, cp)
	sans.Cluster.APIServer.CertSANs = append(sans.Cluster.APIServer.CertSANs, "api.example.com")

	if k := key(sans); k == base {
		t.Error("a new certSAN leaves the key")
	}

	// The controller-manager's and scheduler's kubeconfigs name KubePrism.
	prism := reDecode(t, cp)
	off := false
	prism.Machine.Features.KubePrism.Enabled = &off

	if k := key(prism); k == base {
		t.Error("turning KubePrism off leaves the key")
	}
}
