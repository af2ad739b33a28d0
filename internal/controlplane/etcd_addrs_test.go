package controlplane

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// etcd advertises the node's own address, never one of the pod network's
// links (flannel.1, cni0) that a reset Docker node finds still up.
func TestHostAddrsLeaveThePodNetworkOut(t *testing.T) {
	cfg := func(pods, services []string) *configs.Config {
		return &configs.Config{Cluster: &configs.ClusterConfig{
			ControlPlane: &configs.ControlPlaneConfig{Endpoint: "https://10.5.0.2:6443"},
			Network:      &configs.ClusterNetworkConfig{PodSubnets: pods, ServiceSubnets: services},
		}}
	}

	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}

		return out
	}

	for _, tc := range []struct {
		name  string
		cfg   *configs.Config
		addrs []netip.Addr
		want  []netip.Addr
	}{
		{"flannel.1 and cni0 first by index, default subnets", cfg(nil, nil),
			addrs("10.244.1.0", "10.244.1.1", "10.5.0.2"), addrs("10.5.0.2")},
		{"the config's own pod and service subnets", cfg([]string{"192.168.128.0/17"}, []string{"172.30.0.0/16"}),
			addrs("192.168.130.0", "172.30.0.1", "10.244.1.0", "192.168.1.5"), addrs("10.244.1.0", "192.168.1.5")},
		{"a shared IP held", func() *configs.Config {
			c := cfg(nil, nil)
			c.Machine = &configs.MachineConfig{Network: &configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0", VIP: &configs.VIPConfig{IP: "10.5.0.50"}}}}}

			return c
		}(), addrs("10.5.0.50", "10.5.0.2"), addrs("10.5.0.2")},
		{"only pod addresses: kept rather than none", cfg(nil, nil),
			addrs("10.244.0.5"), addrs("10.244.0.5")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hostAddrs(tc.cfg, tc.addrs); !slices.Equal(got, tc.want) {
				t.Errorf("hostAddrs = %v, want %v", got, tc.want)
			}
		})
	}
}
