package network_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/network"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

func staticConfig() *configs.NetworkConfig {
	return &configs.NetworkConfig{
		Hostname:    "node-1.example.org",
		Nameservers: []string{"10.9.0.53", "10.9.0.54"},
		ExtraHostEntries: []configs.ExtraHost{
			{IP: "10.9.0.100", Aliases: []string{"registry.local", "registry"}},
		},
		Interfaces: []configs.Device{{
			Interface: "eth0",
			// A bare address is a host prefix, as in Talos.
			Addresses: []string{"10.9.0.2/24", "10.9.1.2/24", "10.9.2.2/24", "10.9.3.2"},
			MTU:       1400,
			Routes: []configs.Route{
				{Network: "10.20.0.0/16", Gateway: "10.9.0.1", Metric: 100},
				{Network: "10.30.0.0/16", Gateway: "10.9.1.1", Source: "10.9.1.2", MTU: 1300},
				{Gateway: "10.9.0.1"},
			},
		}},
	}
}

func ready(items []bus.Resource) bool {
	for _, r := range items {
		st := r.(*networkres.NetworkStatus).TypedSpec()
		if st.AddressReady && st.ConnectivityReady && st.HostnameReady && st.EtcFilesReady && len(st.Issues) == 0 {
			return true
		}
	}

	return false
}

func TestStaticConfig(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	nd := startNode(t, ns, nil)
	nd.setConfig(staticConfig())

	nd.waitFor(networkres.NetworkStatusType, "network ready", ready)
	nd.waitFor(networkres.AddressStatusType, "addresses", hasIDs(false, "eth0/10.9.0.2/24", "eth0/10.9.1.2/24", "eth0/10.9.2.2/24", "eth0/10.9.3.2/32"))
	nd.waitFor(networkres.RouteStatusType, "routes", hasIDs(false,
		"inet4/10.9.0.1/10.20.0.0/16/100", "inet4/10.9.1.1/10.30.0.0/16/1024", "inet4/10.9.0.1//1024"))

	nd.waitFor(networkres.LinkStatusType, "eth0 up with MTU 1400", func(items []bus.Resource) bool {
		l, ok := ids(items)["eth0"]
		return ok && l.(*networkres.LinkStatus).TypedSpec().Up && l.(*networkres.LinkStatus).TypedSpec().MTU == 1400
	})

	h := ns.handle()

	link, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}

	if a := link.Attrs(); a.MTU != 1400 || a.Flags&net.FlagUp == 0 {
		t.Errorf("eth0: MTU %d, flags %v; want 1400 and up", a.MTU, a.Flags)
	}

	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: networkres.RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatal(err)
	}

	got := map[string]netlink.Route{}
	for _, r := range routes {
		got[r.Dst.String()] = r
	}

	if r := got["10.20.0.0/16"]; r.Priority != 100 || r.Gw.String() != "10.9.0.1" {
		t.Errorf("route 10.20.0.0/16: %+v", r)
	}

	if r := got["10.30.0.0/16"]; r.MTU != 1300 || r.Src.String() != "10.9.1.2" || r.Priority != 1024 {
		t.Errorf("route 10.30.0.0/16: %+v", r)
	}

	if r, ok := got["0.0.0.0/0"]; !ok || r.Gw.String() != "10.9.0.1" {
		t.Errorf("default route missing or wrong: %v", routes)
	}

	checkFile(t, nd.host, "node-1\n")
	checkFile(t, nd.etc+"/resolv.conf", "nameserver 10.9.0.53\nnameserver 10.9.0.54\n\nsearch example.org\n")

	// hosts follows the node address, which may arrive after readiness.
	nd.waitFor(networkres.EtcFileStatusType, "hosts with the node address", func(items []bus.Resource) bool {
		r, ok := ids(items)[network.HostsFile]
		return ok && strings.Contains(r.(*networkres.EtcFileStatus).TypedSpec().Contents, "10.9.0.2\t")
	})

	hosts, _ := os.ReadFile(nd.etc + "/hosts") //nolint:errcheck // checked below
	for _, line := range []string{"10.9.0.2\tnode-1.example.org node-1\n", "10.9.0.100\tregistry.local registry\n", "127.0.0.1\tlocalhost\n"} {
		if !strings.Contains(string(hosts), line) {
			t.Errorf("hosts lacks %q:\n%s", line, hosts)
		}
	}

	nd.waitFor(networkres.NodeAddressType, "node addresses", func(items []bus.Resource) bool {
		m := ids(items)
		def, ok := m["default"]

		return ok && def.(*networkres.NodeAddress).TypedSpec().Addresses[0].String() == "10.9.0.2/24" && m["current"] != nil
	})
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	if string(b) != want {
		t.Errorf("%s = %q, want %q", path, b, want)
	}
}
