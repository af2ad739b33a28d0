package network_test

import (
	"context"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/etcd/etcdtest"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/resources/config"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/vip"
)

// setDocuments publishes a machine config written as typed documents
// (with the v1alpha1 document or without), as machined does.
func (nd *node) setDocuments(text string) {
	nd.t.Helper()

	cfg, err := configs.Decode([]byte(text))
	if err != nil {
		nd.t.Fatalf("decode: %v\n%s", err, text)
	}

	mc := bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg})

	if _, err := nd.store.Modify(context.Background(), mc, func(r bus.Resource) error {
		r.(*config.MachineConfig).TypedSpec().Config = cfg
		return nil
	}, bus.WithOwner("machined")); err != nil {
		nd.t.Fatal(err)
	}
}

// linkIs is a waitFor condition on one link's status.
func linkIs(name string, cond func(*networkres.LinkStatusSpec) bool) func([]bus.Resource) bool {
	return func(items []bus.Resource) bool {
		l, ok := ids(items)[name]
		return ok && cond(l.(*networkres.LinkStatus).TypedSpec())
	}
}

const linkDocuments = `apiVersion: v1alpha1
kind: HostnameConfig
hostname: node-1.example.org
---
apiVersion: v1alpha1
kind: ResolverConfig
nameservers:
  - address: 10.9.0.53
searchDomains:
  domains: [corp.example]
  disableDefault: true
---
apiVersion: v1alpha1
kind: StaticHostConfig
name: 10.9.0.100
hostnames: [registry.local, registry]
---
apiVersion: v1alpha1
kind: TimeSyncConfig
ntp:
  servers: [ntp.example.org]
---
apiVersion: v1alpha1
kind: LinkConfig
name: eth0
mtu: 1400
multicast: false
addresses:
  - address: 10.9.0.2/24
routes:
  - gateway: 10.9.0.1
  - destination: 10.40.0.0/16
    gateway: 10.9.0.1
    metric: 50
    table: "100"
---
apiVersion: v1alpha1
kind: LinkConfig
name: eth1
up: false
---
apiVersion: v1alpha1
kind: BridgeConfig
name: br0
hardwareAddr: 02:00:00:00:0b:01
links: [eth2, eth3]
addresses:
  - address: 10.8.0.1/24
---
apiVersion: v1alpha1
kind: LinkConfig
name: eth3
mtu: 1450
`

// TestDocumentsConfigureTheNode: a config of typed documents alone (no
// v1alpha1 document) configures links, addresses, routes (one in table
// 100), a bridge with its MAC address and ports, a link that is down, one
// without multicast, the hostname, the resolver, /etc/hosts and the time
// servers, in the kernel and the files.
func TestDocumentsConfigureTheNode(t *testing.T) {
	ns := newNS(t)

	for i, l := range []string{"eth0", "eth1", "eth2", "eth3"} {
		ns.veth(l, "peer"+string(rune('0'+i)))
	}

	// eth1 starts up: the document takes it down.
	ns.ip("link", "set", "eth1", "up")

	nd := startNode(t, ns, nil)
	nd.setDocuments(linkDocuments)

	nd.waitFor(networkres.NetworkStatusType, "network ready", ready)
	nd.waitFor(networkres.AddressStatusType, "addresses", hasIDs(false, "eth0/10.9.0.2/24", "br0/10.8.0.1/24"))
	nd.waitFor(networkres.RouteStatusType, "routes", hasIDs(false, "inet4/10.9.0.1//1024"))
	nd.waitFor(networkres.LinkStatusType, "eth1 down", linkIs("eth1", func(s *networkres.LinkStatusSpec) bool { return !s.Up }))
	nd.waitFor(networkres.LinkStatusType, "br0 up with its MAC", linkIs("br0", func(s *networkres.LinkStatusSpec) bool {
		return s.Up && s.Kind == "bridge" && s.HardwareAddr == "02:00:00:00:0b:01"
	}))

	h := ns.handle()

	eth0, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}

	if a := eth0.Attrs(); a.MTU != 1400 || a.Flags&net.FlagUp == 0 || a.Flags&net.FlagMulticast != 0 {
		t.Errorf("eth0: MTU %d, flags %v; want 1400, up, no multicast", a.MTU, a.Flags)
	}

	// The route of table 100 is in table 100, not in main.
	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 100}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}

	if len(routes) != 1 || routes[0].Dst.String() != "10.40.0.0/16" || routes[0].Gw.String() != "10.9.0.1" || routes[0].Priority != 50 {
		t.Errorf("table 100: %+v, want 10.40.0.0/16 via 10.9.0.1 metric 50", routes)
	}

	br, err := h.LinkByName("br0")
	if err != nil {
		t.Fatal(err)
	}

	if _, ok := br.(*netlink.Bridge); !ok {
		t.Errorf("br0 = %#v, want a bridge", br)
	}

	for _, port := range []string{"eth2", "eth3"} {
		l, err := h.LinkByName(port)
		if err != nil {
			t.Fatal(err)
		}

		if l.Attrs().MasterIndex != br.Attrs().Index || l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s: master %d, flags %v; want br0 (%d) and up", port, l.Attrs().MasterIndex, l.Attrs().Flags, br.Attrs().Index)
		}
	}

	checkFile(t, nd.host, "node-1\n")
	// disableDefault: the node's own domain is no search domain.
	checkFileEventually(t, nd, network.ResolvFile, "nameserver 10.9.0.53\n\nsearch corp.example\n")

	hosts, err := os.ReadFile(nd.etc + "/hosts")
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(hosts), "10.9.0.100\tregistry.local registry\n") {
		t.Errorf("hosts lacks the StaticHostConfig entry:\n%s", hosts)
	}

	nd.waitFor(networkres.TimeServerStatusType, "the TimeSyncConfig's server", func(items []bus.Resource) bool {
		return len(items) == 1 && strings.Join(items[0].(*networkres.TimeServerStatus).TypedSpec().NTPServers, ",") == "ntp.example.org"
	})

	// A change applies live: eth1 comes up once its document no longer
	// says down, eth3 leaves the bridge (its own LinkConfig stays), and
	// the route of table 100 moves to main.
	changed := strings.Replace(linkDocuments, "name: eth1\nup: false\n", "name: eth1\n", 1)
	changed = strings.Replace(changed, "links: [eth2, eth3]", "links: [eth2]", 1)
	changed = strings.Replace(changed, "    table: \"100\"\n", "", 1)
	nd.setDocuments(changed)

	nd.waitFor(networkres.LinkStatusType, "eth1 up", linkIs("eth1", func(s *networkres.LinkStatusSpec) bool { return s.Up }))
	nd.waitFor(networkres.RouteStatusType, "the route in main", hasIDs(false, "inet4/10.9.0.1/10.40.0.0/16/50"))

	if routes, err = h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 100}, netlink.RT_FILTER_TABLE); err != nil || len(routes) != 0 {
		t.Errorf("table 100 after the change: %+v %v, want empty", routes, err)
	}

	nd.waitFor(networkres.LinkStatusType, "eth3 out of the bridge", linkIs("eth3", func(s *networkres.LinkStatusSpec) bool {
		return s.MasterIndex == 0 && s.MTU == 1450
	}))
}

// TestDHCPv4ConfigDocument: a DHCPv4Config alone runs DHCP on its link
// with what machine.network cannot say: the client identifier (dnsmasq
// records the lease under it), and leaving the lease's routes and
// hostname alone; without ignoreRoutes and ignoreHostname they are
// taken, so their absence before was the document's doing.
func TestDHCPv4ConfigDocument(t *testing.T) {
	const mac = "02:00:00:00:00:52"

	ns := newNS(t)
	ns.veth("eth0", "peer0")
	ns.ip("link", "set", "eth0", "address", mac)
	leases := dnsmasqPeer(t, ns, "peer0", mac)

	nd := startNode(t, ns, func(o *network.Options) { o.Operators = network.DHCP4Operators })

	const doc = "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\nclientIdentifier: mac\n"

	nd.setDocuments(doc + "ignoreRoutes: true\nignoreHostname: true\n")
	nd.waitFor(networkres.AddressStatusType, "DHCP address", hasIDs(false, "eth0/10.9.8.50/24"))

	// dnsmasq writes its lease file on its own schedule: polled.
	line := mac + " 10.9.8.50 from-dhcp 01:" + mac
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(leases); strings.Contains(string(b), line) { //nolint:errcheck // not yet written
			break
		}

		if time.Now().After(deadline) {
			b, _ := os.ReadFile(leases) //nolint:errcheck
			t.Fatalf("dnsmasq's leases lack %q:\n%s", line, b)
		}
	}

	if items, err := nd.store.List(context.Background(), bus.Kind{Namespace: networkres.ConfigNamespace, Type: networkres.RouteSpecType}); err != nil || len(items) != 0 {
		t.Errorf("routes with ignoreRoutes: %s %v", dump(items), err)
	}

	if items, err := nd.store.List(context.Background(), bus.Kind{Namespace: networkres.Namespace, Type: networkres.HostnameStatusType}); err != nil ||
		len(items) != 1 || items[0].(*networkres.HostnameStatus).TypedSpec().Hostname != network.DefaultHostname("test-node") {
		t.Errorf("hostname with ignoreHostname: %s %v", dump(items), err)
	}

	nd.setDocuments(doc)
	nd.waitFor(networkres.RouteStatusType, "DHCP default route", hasIDs(false, "inet4/10.9.8.1//1024"))
	nd.waitFor(networkres.HostnameStatusType, "DHCP hostname", func(items []bus.Resource) bool {
		return len(items) == 1 && items[0].(*networkres.HostnameStatus).TypedSpec().Hostname == "from-dhcp"
	})
}

// TestLogicalLinkDocuments: bonds, VLANs, dummies, WireGuard links and
// shared IPs from documents, with what only the documents say (a VLAN's
// name and protocol, MAC addresses, preshared keys, a DHCP client's
// options); the host cannot create these kinds (no modules), so the
// config -> merge half runs here, and the kernel half of each kind is
// networkd's, as for machine.network (TestLogicalLinkSpecs). Link
// documents end default DHCP everywhere, as in Talos.
func TestLogicalLinkDocuments(t *testing.T) {
	nd := configPipelineWith(t, network.Options{NodeID: "n", DefaultDHCP: true}, func(n string) bool {
		return strings.HasSuffix(n, "ConfigController") || strings.HasSuffix(n, "MergeController")
	})

	if err := nd.store.Create(context.Background(), bus.NewTyped(networkres.Namespace, networkres.LinkStatusType, "eth9",
		networkres.LinkStatusSpec{Type: "ether"}), bus.WithOwner("test")); err != nil {
		t.Fatal(err)
	}

	nd.setDocuments(`version: v1alpha1
machine:
  type: controlplane
---
apiVersion: v1alpha1
kind: BondConfig
name: bond0
hardwareAddr: 02:00:00:00:b0:01
links: [eth0, eth1]
bondMode: 802.3ad
miimon: 100
updelay: 200
downdelay: 200
xmitHashPolicy: layer3+4
lacpRate: fast
minLinks: 1
addresses:
  - address: 10.15.0.3/16
---
apiVersion: v1alpha1
kind: LinkConfig
name: eth0
mtu: 9000
---
apiVersion: v1alpha1
kind: VLANConfig
name: vlan100
parent: eth2
vlanID: 100
vlanMode: 802.1ad
mtu: 1400
addresses:
  - address: 192.168.100.2/24
routes:
  - gateway: 192.168.100.1
---
apiVersion: v1alpha1
kind: DHCPv4Config
name: vlan100
routeMetric: 512
ignoreRoutes: true
clientIdentifier: duid
duidRaw: 00:01:00:01:23:45:67:89
---
apiVersion: v1alpha1
kind: Layer2VIPConfig
name: 192.168.100.10
link: vlan100
---
apiVersion: v1alpha1
kind: DummyLinkConfig
name: dummy0
hardwareAddr: 02:00:00:00:d0:01
addresses:
  - address: 169.254.5.5/32
---
apiVersion: v1alpha1
kind: WireguardConfig
name: wg0
privateKey: aFpVsYxq7vEjp3MjHUxFzb5w6eWwDb/LQf6ERy4pTFE=
listenPort: 51820
peers:
  - publicKey: mGE/2HdfEtaS5HmI1J+DVUvXbUXOBY9Hm3ijPtgk8hU=
    presharedKey: 6j4UMxwszrHVZZUjY8/SFsZMjgaHkxV7yp9Tz05btho=
    endpoint: 192.0.2.1:51820
    allowedIPs: [10.99.0.0/16]
`)

	var links map[string]bus.Resource

	// Exactly these: eth9's default DHCP link spec goes.
	want := []string{"lo", "bond0", "eth0", "eth1", "eth2", "vlan100", "dummy0", "wg0"}

	nd.waitFor(networkres.LinkSpecType, "logical link specs", func(items []bus.Resource) bool {
		links = ids(items)
		return len(links) == len(want) && hasIDs(false, want...)(items)
	})

	spec := func(id string) *networkres.LinkSpecSpec { return links[id].(*networkres.LinkSpec).TypedSpec() }

	if s := spec("bond0"); s.Kind != networkres.KindBond || s.HardwareAddr != "02:00:00:00:b0:01" ||
		s.Bond != (networkres.BondSpec{Mode: "802.3ad", HashPolicy: "layer3+4", LACPRate: "fast", MIIMon: 100, UpDelay: 200, DownDelay: 200, MinLinks: 1}) {
		t.Errorf("bond0: %+v", s)
	}

	// eth0 is a member and has a LinkConfig: one spec.
	if s := spec("eth0"); s.BondMaster != "bond0" || s.MTU != 9000 || !s.Up {
		t.Errorf("eth0: %+v", s)
	}

	if s := spec("vlan100"); s.Kind != networkres.KindVLAN || s.ParentName != "eth2" || s.VLAN != (networkres.VLANSpec{ID: 100, Protocol: "802.1ad"}) || s.MTU != 1400 {
		t.Errorf("vlan100: %+v", s)
	}

	if s := spec("dummy0"); s.Kind != networkres.KindDummy || s.HardwareAddr != "02:00:00:00:d0:01" {
		t.Errorf("dummy0: %+v", s)
	}

	if s := spec("wg0"); s.Kind != networkres.KindWireGuard || len(s.WireGuard.Peers) != 1 ||
		s.WireGuard.Peers[0].PresharedKey != "6j4UMxwszrHVZZUjY8/SFsZMjgaHkxV7yp9Tz05btho=" || s.WireGuard.ListenPort != 51820 {
		t.Errorf("wg0: %+v", s)
	}

	nd.waitFor(networkres.AddressSpecType, "addresses", hasIDs(false, "bond0/10.15.0.3/16", "vlan100/192.168.100.2/24", "dummy0/169.254.5.5/32"))
	nd.waitFor(networkres.RouteSpecType, "the VLAN's default route", hasIDs(false, "inet4/192.168.100.1//1024"))

	var ops map[string]bus.Resource

	nd.waitFor(networkres.OperatorSpecType, "DHCP and the shared IP on the VLAN, no default DHCP", func(items []bus.Resource) bool {
		ops = ids(items)
		return len(ops) == 2 && ops["dhcp4/vlan100"] != nil && ops["vip/vlan100"] != nil
	})

	if s := ops["dhcp4/vlan100"].(*networkres.OperatorSpec).TypedSpec(); s.RouteMetric != 512 || !s.SkipRoutes ||
		s.ClientIdentifier != "duid" || s.DUIDRaw != "0001000123456789" {
		t.Errorf("dhcp4/vlan100: %+v", s)
	}

	if s := ops["vip/vlan100"].(*networkres.OperatorSpec).TypedSpec(); s.VIP.IP.String() != "192.168.100.10" || !s.VIP.GratuitousARP {
		t.Errorf("vip/vlan100: %+v", s)
	}

	// Without the documents, default DHCP comes back on eth9.
	nd.setDocuments("version: v1alpha1\nmachine:\n  type: controlplane\n")
	nd.waitFor(networkres.OperatorSpecType, "default DHCP on eth9", func(items []bus.Resource) bool {
		ops = ids(items)
		return len(ops) == 1 && ops["dhcp4/eth9"] != nil
	})
}

// TestLayer2VIPDocument: on a control plane, a Layer2VIPConfig alone
// (not machine.network's vip) puts the shared IP on its link once the
// node wins the election in its etcd: the real vip operator, against a
// real etcd member.
func TestLayer2VIPDocument(t *testing.T) {
	member := etcdtest.Start(t)
	cli := member.Client(t)

	ns := newNS(t)
	ns.veth("eth0", "peer0")

	nd := startNode(t, ns, func(o *network.Options) {
		o.Operators = func(spec networkres.OperatorSpecSpec, env network.OperatorEnv) (network.Operator, error) {
			if spec.Operator != networkres.OperatorVIP {
				return nil, nil
			}

			return vip.New(vip.Options{
				Spec: spec, Candidate: "cp-1", TTL: 2 * time.Second, InNetNS: env.InNetNS,
				Client: func(context.Context) (*clientv3.Client, <-chan struct{}, error) { return cli, nil, nil },
			})
		}
	})

	nd.setDocuments(`version: v1alpha1
machine:
  type: controlplane
---
apiVersion: v1alpha1
kind: LinkConfig
name: eth0
addresses:
  - address: 10.9.0.2/24
---
apiVersion: v1alpha1
kind: Layer2VIPConfig
name: 10.9.0.100
link: eth0
`)

	nd.waitFor(networkres.AddressStatusType, "the shared IP on eth0", hasIDs(false, "eth0/10.9.0.100/32"))

	addrs, err := ns.handle().AddrList(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}}, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, a := range addrs {
		got = append(got, a.IPNet.String())
	}

	if !slices.Contains(got, "10.9.0.100/32") {
		t.Errorf("eth0 addresses %v lack the shared IP", got)
	}
}
