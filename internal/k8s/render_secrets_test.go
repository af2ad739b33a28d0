package k8s

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
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
}
