package network_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/timed"
)

func TestDefinitionsRegister(t *testing.T) {
	reg := bus.NewRegistry()
	for _, d := range append(append(append([]bus.Definition{}, machine.Definitions...), supervisor.Definition, timed.Definition), network.Definitions...) {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}

	for name, want := range map[string]string{
		"address": network.AddressStatusType, "routes": network.RouteStatusType, "hostname": network.HostnameStatusType,
		"resolvers": network.ResolverStatusType, "timeservers": network.TimeServerStatusType, "nodeaddresses": network.NodeAddressType,
		"operators": network.OperatorSpecType, "netstatus": network.NetworkStatusType, "links": network.LinkStatusType,
	} {
		d, err := reg.Lookup(name)
		if err != nil || d.Type != want {
			t.Errorf("lookup %q: %v %v", name, d.Type, err)
		}
	}

	if network.MachineConfigType != machine.MachineConfigType || network.MachineConfigNamespace != machine.NamespaceConfig ||
		network.MachineConfigID != machine.ActiveConfigID {
		t.Error("network's names for the machine config drifted from internal/machine")
	}
}

// fakeDHCP stands in for the DHCP helper's operator.
type fakeDHCP struct {
	mu   sync.Mutex
	link string
	addr netip.Prefix
}

func (f *fakeDHCP) Run(ctx context.Context, notify func()) {
	f.mu.Lock()
	f.addr = netip.MustParsePrefix("10.9.8.50/24")
	f.mu.Unlock()
	notify()
	<-ctx.Done()
}

func (f *fakeDHCP) AddressSpecs() []network.AddressSpecSpec {
	f.mu.Lock()
	defer f.mu.Unlock()

	if !f.addr.IsValid() {
		return nil
	}

	return []network.AddressSpecSpec{{Address: f.addr, LinkName: f.link, Family: network.FamilyInet4}}
}

func (f *fakeDHCP) RouteSpecs() []network.RouteSpecSpec {
	return []network.RouteSpecSpec{{Family: network.FamilyInet4, Gateway: netip.MustParseAddr("10.9.8.1"), OutLinkName: f.link,
		Table: network.TableMain, Priority: 1024, Scope: network.ScopeGlobal}}
}

func (f *fakeDHCP) HostnameSpecs() []network.HostnameSpecSpec {
	return []network.HostnameSpecSpec{{Hostname: "from-dhcp"}}
}

func (f *fakeDHCP) ResolverSpecs() []network.ResolverSpecSpec {
	return []network.ResolverSpecSpec{{DNSServers: []netip.Addr{netip.MustParseAddr("10.9.8.53")}}}
}

func (f *fakeDHCP) TimeServerSpecs() []network.TimeServerSpecSpec { return nil }

// The operator hook: dhcp: true starts an operator whose results land at
// the operator layer; the config's hostname still wins over DHCP's, and
// DHCP's wins over the default.
func TestOperatorLayer(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	var (
		mu      sync.Mutex
		started []network.OperatorSpecSpec
	)

	nd := startNode(t, ns, func(o *network.Options) {
		o.Operators = func(spec network.OperatorSpecSpec, _ network.OperatorEnv) (network.Operator, error) {
			mu.Lock()
			defer mu.Unlock()

			started = append(started, spec)
			return &fakeDHCP{link: spec.LinkName}, nil
		}
	})

	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0", DHCP: true}}})
	nd.waitFor(network.AddressStatusType, "DHCP address", hasIDs(false, "eth0/10.9.8.50/24"))
	nd.waitFor(network.RouteStatusType, "DHCP default route", hasIDs(false, "inet4/10.9.8.1//1024"))
	nd.waitFor(network.HostnameStatusType, "DHCP hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*network.HostnameStatus).TypedSpec().Hostname == "from-dhcp"
	})
	checkFileEventually(t, nd, network.ResolvFile, "nameserver 10.9.8.53\n")

	nd.setConfig(&configs.NetworkConfig{Hostname: "configured", Interfaces: []configs.Device{{Interface: "eth0", DHCP: true}}})
	nd.waitFor(network.HostnameStatusType, "configured hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*network.HostnameStatus).TypedSpec().Hostname == "configured"
	})

	// Without dhcp the operator stops and its address goes.
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0"}}})
	nd.waitFor(network.AddressStatusType, "DHCP address gone", hasIDs(true, "eth0/10.9.8.50/24"))
	nd.waitFor(network.HostnameStatusType, "default hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*network.HostnameStatus).TypedSpec().Hostname == network.DefaultHostname("test-node")
	})

	mu.Lock()
	defer mu.Unlock()

	if len(started) == 0 || started[0].Operator != network.OperatorDHCP4 || started[0].LinkName != "eth0" || started[0].RouteMetric != 1024 {
		t.Errorf("operators started: %+v", started)
	}
}

// Without an operator factory a DHCP link is reported pending.
func TestOperatorNotWired(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	nd := startNode(t, ns, nil)
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0", DHCP: true}}})
	nd.issue("operator/dhcp4/eth0", "no dhcp4 operator is wired into networkd")
}

// ip= on the kernel command line configures its link at the cmdline layer.
func TestCmdlineLayer(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	nd := startNode(t, ns, func(o *network.Options) {
		o.KernelCmdline = "ip=10.9.9.2::10.9.9.1:255.255.255.0:cmdhost:eth0:off:10.9.9.53"
	})

	nd.waitFor(network.RouteStatusType, "cmdline default route", hasIDs(false, "inet4/10.9.9.1//1024"))
	nd.waitFor(network.AddressStatusType, "cmdline address", hasIDs(false, "eth0/10.9.9.2/24"))
	nd.waitFor(network.HostnameStatusType, "cmdline hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*network.HostnameStatus).TypedSpec().Hostname == "cmdhost"
	})
	checkFileEventually(t, nd, network.ResolvFile, "nameserver 10.9.9.53\n")
}

func checkFileEventually(t *testing.T, nd *node, id, want string) {
	t.Helper()

	nd.waitFor(network.EtcFileStatusType, id, func(items []bus.Resource) bool {
		r, ok := ids(items)[id]
		return ok && r.(*network.EtcFileStatus).TypedSpec().Contents == want
	})
	checkFile(t, nd.etc+"/"+id, want)
}
