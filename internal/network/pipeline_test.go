package network_test

import (
	"context"
	"net/netip"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/network"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

func TestDefinitionsRegister(t *testing.T) {
	reg := bus.NewRegistry()
	for _, d := range append(append([]bus.Definition{}, runtime.Definitions...), networkres.Definitions...) {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}

	for name, want := range map[string]string{
		"address": networkres.AddressStatusType, "routes": networkres.RouteStatusType, "hostname": networkres.HostnameStatusType,
		"resolvers": networkres.ResolverStatusType, "timeservers": networkres.TimeServerStatusType, "nodeaddresses": networkres.NodeAddressType,
		"operators": networkres.OperatorSpecType, "netstatus": networkres.NetworkStatusType, "links": networkres.LinkStatusType,
	} {
		d, err := reg.Lookup(name)
		if err != nil || d.Type != want {
			t.Errorf("lookup %q: %v %v", name, d.Type, err)
		}
	}
}

// dnsmasqPeer moves peer into a namespace of its own as the DHCP server's
// side of the link (10.9.8.1/24) and runs Debian's dnsmasq there, giving
// mac the fixed lease 10.9.8.50 and the hostname "from-dhcp". It returns
// dnsmasq's lease file.
func dnsmasqPeer(t *testing.T, ns *testNS, peer, mac string) string {
	t.Helper()

	if _, err := exec.LookPath("dnsmasq"); err != nil {
		t.Fatal("dnsmasq is required (dnsmasq-base; scripts/install-deps.sh installs it)")
	}

	srv := newNS(t)
	ns.ip("link", "set", peer, "netns", srv.name)
	srv.ip("addr", "add", "10.9.8.1/24", "dev", peer)
	srv.ip("link", "set", peer, "up")

	dir := t.TempDir()
	cmd := exec.Command("ip", "netns", "exec", srv.name, "dnsmasq", "--no-daemon", "--conf-file=/dev/null", "--port=0",
		"--interface="+peer, "--bind-interfaces", "--dhcp-authoritative", "--dhcp-range=10.9.8.40,10.9.8.60,2m",
		"--dhcp-option=option:router,10.9.8.1", "--dhcp-option=option:dns-server,10.9.8.53", "--dhcp-option=option:mtu,1400",
		"--dhcp-host="+mac+",10.9.8.50,from-dhcp", "--dhcp-leasefile="+filepath.Join(dir, "leases"))

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // stopping the peer
		cmd.Wait()         //nolint:errcheck
	})

	return filepath.Join(dir, "leases")
}

// DHCP end to end: dhcp: true starts the dhcp4 operator, which takes a
// lease from a real dnsmasq; its address, default route, hostname and DNS
// land at the operator layer. The config's hostname still wins over
// DHCP's, and DHCP's wins over the default.
func TestOperatorLayer(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")
	ns.ip("link", "set", "eth0", "address", "02:00:00:00:00:51")
	dnsmasqPeer(t, ns, "peer0", "02:00:00:00:00:51")

	var (
		mu      sync.Mutex
		started []networkres.OperatorSpecSpec
	)

	nd := startNode(t, ns, func(o *network.Options) {
		o.Operators = func(spec networkres.OperatorSpecSpec, env network.OperatorEnv) (network.Operator, error) {
			mu.Lock()
			defer mu.Unlock()

			started = append(started, spec)

			return network.DHCP4Operators(spec, env)
		}
	})

	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0", DHCP: true}}})
	nd.waitFor(networkres.AddressStatusType, "DHCP address", hasIDs(false, "eth0/10.9.8.50/24"))
	nd.waitFor(networkres.RouteStatusType, "DHCP default route", hasIDs(false, "inet4/10.9.8.1//1024"))
	nd.waitFor(networkres.HostnameStatusType, "DHCP hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == "from-dhcp"
	})
	checkFileEventually(t, nd, network.ResolvFile, "nameserver 10.9.8.53\n")

	// The lease's MTU reaches the link; a configured MTU wins over it.
	linkMTU := func(mtu int) func([]bus.Resource) bool {
		return func(items []bus.Resource) bool {
			for _, it := range items {
				if it.Metadata().ID == "eth0" && it.(*networkres.LinkStatus).TypedSpec().MTU == mtu {
					return true
				}
			}

			return false
		}
	}

	nd.waitFor(networkres.LinkStatusType, "eth0 at the lease's MTU 1400", linkMTU(1400))
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0", DHCP: true, MTU: 1300}}})
	nd.waitFor(networkres.LinkStatusType, "eth0 at the configured MTU 1300", linkMTU(1300))

	nd.setConfig(&configs.NetworkConfig{Hostname: "configured", Interfaces: []configs.Device{{Interface: "eth0", DHCP: true}}})
	nd.waitFor(networkres.HostnameStatusType, "configured hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == "configured"
	})

	// Without dhcp the operator stops and its address goes.
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{Interface: "eth0"}}})
	nd.waitFor(networkres.AddressStatusType, "DHCP address gone", hasIDs(true, "eth0/10.9.8.50/24"))
	nd.waitFor(networkres.HostnameStatusType, "default hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == network.DefaultHostname("test-node")
	})

	mu.Lock()
	defer mu.Unlock()

	if len(started) == 0 || started[0].Operator != networkres.OperatorDHCP4 || started[0].LinkName != "eth0" || started[0].RouteMetric != 1024 {
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

	nd.waitFor(networkres.RouteStatusType, "cmdline default route", hasIDs(false, "inet4/10.9.9.1//1024"))
	nd.waitFor(networkres.AddressStatusType, "cmdline address", hasIDs(false, "eth0/10.9.9.2/24"))
	nd.waitFor(networkres.HostnameStatusType, "cmdline hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == "cmdhost"
	})
	checkFileEventually(t, nd, network.ResolvFile, "nameserver 10.9.9.53\n")
}

// A container's hostname beats talos-xxx-yyy and loses to the config.
func TestPlatformHostnameLayer(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	nd := startNode(t, ns, func(o *network.Options) { o.PlatformHostname = "demo-controlplane-1" })

	hostname := func(want string) func([]bus.Resource) bool {
		return func(items []bus.Resource) bool {
			return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == want
		}
	}

	nd.waitFor(networkres.HostnameStatusType, "the platform's hostname", hostname("demo-controlplane-1"))
	checkFile(t, nd.host, "demo-controlplane-1\n")

	nd.setConfig(&configs.NetworkConfig{Hostname: "from-config"})
	nd.waitFor(networkres.HostnameStatusType, "the config's hostname", hostname("from-config"))
}

// The platform's network config (NoCloud's network-config) configures its
// link at the platform layer, above ip= and below the machine config, and
// the link it configures gets no default DHCP.
func TestPlatformNetworkLayer(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	plat := &networkres.PlatformConfigSpec{
		Links:     []networkres.LinkSpecSpec{{Name: "eth0", Up: true}},
		Addresses: []networkres.AddressSpecSpec{{Address: netip.MustParsePrefix("10.8.8.2/24"), LinkName: "eth0", Family: networkres.FamilyInet4}},
		Routes: []networkres.RouteSpecSpec{{Family: networkres.FamilyInet4, Gateway: netip.MustParseAddr("10.8.8.1"), OutLinkName: "eth0",
			Table: networkres.TableMain, Priority: networkres.DefaultRouteMetric, Scope: network.ScopeGlobal, Type: networkres.RouteTypeUnicast, Protocol: networkres.ProtoStatic}},
		Hostnames: []networkres.HostnameSpecSpec{{Hostname: "cidata-node"}},
		Resolvers: []networkres.ResolverSpecSpec{{DNSServers: []netip.Addr{netip.MustParseAddr("10.8.8.53")}}},
	}

	nd := startNode(t, ns, func(o *network.Options) {
		o.KernelCmdline = "talos.hostname=cmdhost"
		o.Platform = plat
		o.DefaultDHCP = true
	})

	nd.waitFor(networkres.AddressStatusType, "the platform's address", hasIDs(false, "eth0/10.8.8.2/24"))
	nd.waitFor(networkres.RouteStatusType, "the platform's default route", hasIDs(false, "inet4/10.8.8.1//1024"))
	nd.waitFor(networkres.HostnameStatusType, "the platform's hostname over the cmdline's", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == "cidata-node"
	})
	checkFileEventually(t, nd, network.ResolvFile, "nameserver 10.8.8.53\n")

	// The operators are built from the same inputs as the address the
	// kernel now shows: without the platform, eth0 would have DHCP here.
	if ops, err := nd.store.List(context.Background(), bus.Kind{Namespace: networkres.Namespace, Type: networkres.OperatorSpecType}); err != nil || len(ops) != 0 {
		t.Errorf("operators beside the platform's static address: %v%s", err, dump(ops))
	}

	nd.setConfig(&configs.NetworkConfig{Hostname: "from-config"})
	nd.waitFor(networkres.HostnameStatusType, "the config's hostname over the platform's", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == "from-config"
	})
}

func checkFileEventually(t *testing.T, nd *node, id, want string) {
	t.Helper()

	nd.waitFor(networkres.EtcFileStatusType, id, func(items []bus.Resource) bool {
		r, ok := ids(items)[id]
		return ok && r.(*networkres.EtcFileStatus).TypedSpec().Contents == want
	})
	checkFile(t, nd.etc+"/"+id, want)
}

// A platform whose network config arrives over the network (NoCloud's
// ds=nocloud-net seed): the node starts with the hostname it had at boot
// and default DHCP on eth0; once the fetch answers, its static address
// replaces the DHCP operator on that link.
func TestPlatformFetchedLater(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	release := make(chan struct{})

	nd := startNode(t, ns, func(o *network.Options) {
		o.Platform = &networkres.PlatformConfigSpec{Hostnames: []networkres.HostnameSpecSpec{{Hostname: "from-serial"}}}
		o.PlatformFetch = func(ctx context.Context) (*networkres.PlatformConfigSpec, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}

			return &networkres.PlatformConfigSpec{
				Links:     []networkres.LinkSpecSpec{{Name: "eth0", Up: true}},
				Addresses: []networkres.AddressSpecSpec{{Address: netip.MustParsePrefix("10.8.9.2/24"), LinkName: "eth0", Family: networkres.FamilyInet4}},
				Hostnames: []networkres.HostnameSpecSpec{{Hostname: "from-seed"}},
			}, nil
		}
		o.DefaultDHCP = true
	})

	hostname := func(want string) func([]bus.Resource) bool {
		return func(items []bus.Resource) bool {
			return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == want
		}
	}

	nd.waitFor(networkres.HostnameStatusType, "the serial's hostname", hostname("from-serial"))
	nd.waitFor(networkres.OperatorSpecType, "default DHCP before the seed answers", hasIDs(false, "dhcp4/eth0"))

	close(release)

	nd.waitFor(networkres.AddressStatusType, "the seed's address", hasIDs(false, "eth0/10.8.9.2/24"))
	nd.waitFor(networkres.HostnameStatusType, "the seed's hostname", hostname("from-seed"))
	nd.waitFor(networkres.OperatorSpecType, "no DHCP on the link the seed configures", func(items []bus.Resource) bool { return len(items) == 0 })
}
