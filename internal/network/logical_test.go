package network_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/network"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// The specs for bonds, VLANs, dummies and WireGuard links; this host
// cannot create them (no modules), so only the config -> merge half runs
// here and the kernel half is left to the QEMU guest.
func TestLogicalLinkSpecs(t *testing.T) {
	nd := configPipeline(t, func(n string) bool {
		return strings.HasSuffix(n, "ConfigController") || strings.HasSuffix(n, "MergeController")
	})
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{
		{Interface: "bond0", Bond: &configs.Bond{Mode: "802.3ad", LACPRate: "fast", HashPolicy: "layer3+4", MIIMon: 100, Interfaces: []string{"eth0", "eth1"}},
			DHCP: true},
		{Interface: "eth2", VLANs: []configs.VLAN{{ID: 100, CIDR: "192.168.2.10/28", MTU: 1400,
			Routes: []configs.Route{{Network: "0.0.0.0/0", Gateway: "192.168.2.1"}}}}},
		{Interface: "dummy0", Dummy: true, Addresses: []string{"169.254.5.5/32"}},
		{Interface: "wg0", WireGuard: &configs.WireGuardConfig{
			PrivateKey: "aFpVsYxq7vEjp3MjHUxFzb5w6eWwDb/LQf6ERy4pTFE=", ListenPort: 51820,
			Peers: []configs.WireGuardPeer{{PublicKey: "mGE/2HdfEtaS5HmI1J+DVUvXbUXOBY9Hm3ijPtgk8hU=", Endpoint: "192.0.2.1:51820",
				PersistentKeepaliveInterval: 25 * time.Second, AllowedIPs: []string{"10.99.0.0/16"}}},
		}},
		{Interface: "eth9", Ignore: true, Addresses: []string{"10.1.1.1/24"}},
	}})

	var links map[string]bus.Resource

	nd.waitFor(networkres.LinkSpecType, "logical link specs", func(items []bus.Resource) bool {
		links = ids(items)
		return len(links) == 8 // lo, bond0, eth0, eth1, eth2, eth2.100, dummy0, wg0
	})

	spec := func(id string) *networkres.LinkSpecSpec { return links[id].(*networkres.LinkSpec).TypedSpec() }

	if s := spec("bond0"); !s.Logical || s.Kind != networkres.KindBond || s.Bond.Mode != "802.3ad" || s.Bond.MIIMon != 100 {
		t.Errorf("bond0: %+v", s)
	}

	if s := spec("eth1"); s.BondMaster != "bond0" || s.Logical {
		t.Errorf("eth1: %+v", s)
	}

	if s := spec("eth2.100"); s.Kind != networkres.KindVLAN || s.ParentName != "eth2" || s.VLAN.ID != 100 || s.MTU != 1400 {
		t.Errorf("eth2.100: %+v", s)
	}

	if s := spec("dummy0"); s.Kind != networkres.KindDummy || !s.Logical {
		t.Errorf("dummy0: %+v", s)
	}

	if s := spec("wg0"); s.Kind != networkres.KindWireGuard || len(s.WireGuard.Peers) != 1 || s.WireGuard.Peers[0].AllowedIPs[0].String() != "10.99.0.0/16" {
		t.Errorf("wg0: %+v", s)
	}

	nd.waitFor(networkres.RouteSpecType, "VLAN default route", hasIDs(false, "inet4/192.168.2.1//1024"))
	nd.waitFor(networkres.AddressSpecType, "VLAN and dummy addresses, not the ignored link's",
		func(items []bus.Resource) bool {
			m := ids(items)
			return m["eth2.100/192.168.2.10/28"] != nil && m["dummy0/169.254.5.5/32"] != nil && m["eth9/10.1.1.1/24"] == nil
		})
	nd.waitFor(networkres.OperatorSpecType, "DHCP on the bond", hasIDs(false, "dhcp4/bond0"))
}

// A shared IP gets a vip operator on a control plane only, on the link or
// VLAN it is configured on.
func TestVIPOperatorSpecs(t *testing.T) {
	nd := configPipeline(t, func(n string) bool {
		return n == "network.OperatorConfigController" || n == "network.OperatorMergeController"
	})
	netCfg := &configs.NetworkConfig{Interfaces: []configs.Device{
		{Interface: "eth0", DHCP: true, VIP: &configs.VIPConfig{IP: "10.5.0.100"}},
		{Interface: "eth1", VLANs: []configs.VLAN{{ID: 7, VIP: &configs.VIPConfig{IP: "192.168.7.100"}}}},
	}}

	nd.setConfigOf("controlplane", netCfg)

	var got map[string]bus.Resource

	nd.waitFor(networkres.OperatorSpecType, "vip operators on eth0 and eth1.7", func(items []bus.Resource) bool {
		got = ids(items)
		return got["vip/eth0"] != nil && got["vip/eth1.7"] != nil && got["dhcp4/eth0"] != nil
	})

	if s := got["vip/eth0"].(*networkres.OperatorSpec).TypedSpec(); s.VIP.IP.String() != "10.5.0.100" || !s.VIP.GratuitousARP || !s.RequireUp {
		t.Errorf("vip/eth0: %+v", s)
	}

	if s := got["vip/eth1.7"].(*networkres.OperatorSpec).TypedSpec(); s.VIP.IP.String() != "192.168.7.100" {
		t.Errorf("vip/eth1.7: %+v", s)
	}

	// The same config on a worker: DHCP stays, the shared IP does not.
	nd.setConfigOf("worker", netCfg)
	nd.waitFor(networkres.OperatorSpecType, "no vip operator on a worker", func(items []bus.Resource) bool {
		got = ids(items)
		return got["vip/eth0"] == nil && got["vip/eth1.7"] == nil && got["dhcp4/eth0"] != nil
	})
}

// configPipeline runs the controllers whose names pick accepts on a bus
// of their own, with no kernel behind them, until the test ends.
func configPipeline(t *testing.T, pick func(name string) bool) *node {
	t.Helper()

	return configPipelineWith(t, network.Options{NodeID: "n"}, pick)
}

// configPipelineWith is configPipeline with networkd's options.
func configPipelineWith(t *testing.T, opts network.Options, pick func(name string) bool) *node {
	t.Helper()

	store := bus.NewStore(bus.StoreOptions{})
	rt := bus.NewRuntime(store, bus.RuntimeOptions{})

	for _, c := range network.Controllers(opts) {
		if pick(c.Name()) {
			if err := rt.Register(c); err != nil {
				t.Fatal(err)
			}
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck
	}()

	t.Cleanup(func() { cancel(); <-done })

	return &node{t: t, store: store}
}

// On metal (DefaultDHCP) the first Ethernet link gets DHCP at the default
// layer, until ip= or the config says something about it.
func TestDefaultDHCP(t *testing.T) {
	nd := configPipelineWith(t, network.Options{NodeID: "n", DefaultDHCP: true}, func(n string) bool {
		return strings.HasSuffix(n, "ConfigController") || strings.HasSuffix(n, "MergeController")
	})

	// bond0 (the bonding module makes one when it loads) sorts first but is
	// no physical NIC.
	for id, spec := range map[string]networkres.LinkStatusSpec{"bond0": {Type: "ether", Kind: "bond"}, "eth0": {Type: "ether"}} {
		if err := nd.store.Create(context.Background(), bus.NewTyped(networkres.Namespace, networkres.LinkStatusType, id, spec), bus.WithOwner("test")); err != nil {
			t.Fatal(err)
		}
	}

	nd.setConfig(nil)
	nd.waitFor(networkres.OperatorSpecType, "default DHCP on eth0, not bond0", func(items []bus.Resource) bool {
		m := ids(items)
		return m["dhcp4/eth0"] != nil && m["dhcp4/bond0"] == nil
	})
	nd.waitFor(networkres.LinkSpecType, "eth0 up", hasIDs(false, "eth0"))

	// A static address in the config replaces it.
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0", Addresses: []string{"10.5.0.9/24"}}}})
	nd.waitFor(networkres.OperatorSpecType, "no DHCP on a configured link", hasIDs(true, "dhcp4/eth0"))
}
