package nocloud

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// nwLinks is the host the tests run against: MAC → kernel name.
var nwLinks = map[string]string{
	"68:05:ca:b8:f1:f7": "ens3",
	"00:20:6e:1f:f9:a8": "enp1s0",
	"00:20:6e:1f:f9:a9": "enp2s0",
}

func nwResolve(mac string) (string, bool) {
	name, ok := nwLinks[mac]
	return name, ok
}

func nwLink(name string, mtu uint32) network.LinkSpecSpec {
	return network.LinkSpecSpec{Name: name, Up: true, MTU: mtu, Layer: network.LayerPlatform}
}

func nwAddr(link, cidr string) network.AddressSpecSpec {
	p := netip.MustParsePrefix(cidr)
	return network.AddressSpecSpec{Address: p, LinkName: link, Family: network.FamilyOf(p.Addr()), Layer: network.LayerPlatform}
}

// nwRoute is a route out of link ("" for none) to dst ("" for default) via
// gw ("" for a direct route).
func nwRoute(link, dst, gw string, metric uint32) network.RouteSpecSpec {
	rt := network.RouteSpecSpec{
		OutLinkName: link, Table: network.TableMain, Priority: metric, Scope: "global",
		Type: network.RouteTypeUnicast, Protocol: network.ProtoStatic, Layer: network.LayerPlatform,
	}
	if dst != "" {
		rt.Destination = netip.MustParsePrefix(dst)
		rt.Family = network.FamilyOf(rt.Destination.Addr())
	}

	if gw != "" {
		rt.Gateway = netip.MustParseAddr(gw)
		rt.Family = network.FamilyOf(rt.Gateway)
	} else {
		rt.Scope = "link"
	}

	return rt
}

func nwDHCP(link string) network.OperatorSpecSpec {
	return network.OperatorSpecSpec{
		Operator: network.OperatorDHCP4, LinkName: link, RequireUp: true, RouteMetric: network.DefaultRouteMetric, Layer: network.LayerPlatform,
	}
}

func nwDNS(servers []string, search ...string) []network.ResolverSpecSpec {
	spec := network.ResolverSpecSpec{SearchDomains: search, Layer: network.LayerPlatform}
	for _, s := range servers {
		spec.DNSServers = append(spec.DNSServers, netip.MustParseAddr(s))
	}

	return []network.ResolverSpecSpec{spec}
}

func nwHost(host, domain string) []network.HostnameSpecSpec {
	return []network.HostnameSpecSpec{{Hostname: host, Domainname: domain, Layer: network.LayerPlatform}}
}

var nwCases = []struct {
	name, in, hostname string
	want               network.PlatformConfigSpec
}{
	{
		name: "v1 static with netmask", hostname: "node-1",
		in: `version: 1
config:
  - type: physical
    name: eth0
    mac_address: '68:05:CA:B8:F1:F7'
    mtu: 1450
    subnets:
    - type: static
      address: '192.168.1.11'
      netmask: '255.255.255.0'
      gateway: '192.168.1.1'
    - type: static6
      address: '2001:2:3:4:5:6:7:f7'
      netmask: 64
      gateway: 'fe80::1'
  - type: physical
    name: eth1
    subnets:
    - type: static
      address: 192.168.2.11
      netmask: 255.255.0.0
  - type: nameserver
    address:
    - '192.168.1.1'
    search:
    - 'lan'
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("ens3", 1450), nwLink("eth1", 0)},
			Addresses: []network.AddressSpecSpec{nwAddr("ens3", "192.168.1.11/24"), nwAddr("ens3", "2001:2:3:4:5:6:7:f7/64"), nwAddr("eth1", "192.168.2.11/16")},
			Routes:    []network.RouteSpecSpec{nwRoute("ens3", "", "192.168.1.1", 1024), nwRoute("ens3", "", "fe80::1", 1024)},
			Hostnames: nwHost("node-1", ""),
			Resolvers: nwDNS([]string{"192.168.1.1"}, "lan"),
		},
	},
	{
		name: "v1 CIDR, routes and nameservers",
		in: `version: 1
config:
- type: physical
  name: eth0
  subnets:
  - type: static
    address: 10.0.0.5/24
    gateway: 10.0.0.1
    dns_nameservers: [10.0.0.2, 1.1.1.1]
    dns_search: example.com
    routes:
    - network: 172.16.0.0
      netmask: 255.240.0.0
      gateway: 10.0.0.254
      metric: 50
    - destination: 192.168.100.0/24
- type: nameserver
  address: 1.1.1.1
  search: [example.com, corp.example.com]
- type: route
  destination: 203.0.113.7/24
  gateway: 10.0.0.253
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("eth0", 0)},
			Addresses: []network.AddressSpecSpec{nwAddr("eth0", "10.0.0.5/24")},
			Routes: []network.RouteSpecSpec{
				nwRoute("eth0", "", "10.0.0.1", 1024), nwRoute("eth0", "172.16.0.0/12", "10.0.0.254", 50),
				nwRoute("eth0", "192.168.100.0/24", "", 1024), nwRoute("", "203.0.113.0/24", "10.0.0.253", 1024),
			},
			Resolvers: nwDNS([]string{"10.0.0.2", "1.1.1.1"}, "example.com", "corp.example.com"),
		},
	},
	{
		name: "v1 dhcp",
		in: `version: 1
config:
- type: physical
  name: eth0
  mac_address: 00:20:6e:1f:f9:a8
  subnets:
  - type: dhcp
  - type: dhcp6
- type: physical
  name: eth1
  subnets:
  - type: dhcp4
  - type: ipv6_dhcpv6-stateless
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("enp1s0", 0), nwLink("eth1", 0)},
			Operators: []network.OperatorSpecSpec{nwDHCP("enp1s0"), nwDHCP("eth1")},
		},
	},
	{
		name: "v2 match macaddress and set-name",
		in: `version: 2
ethernets:
  wan:
    match:
      macaddress: 00:20:6e:1f:f9:a9
    addresses: [192.0.2.10/24]
    gateway4: 192.0.2.1
    mtu: 9000
  lan:
    match:
      macaddress: "00:20:6E:1F:F9:A8"
    set-name: lan0
    dhcp4: true
    dhcp6: true
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("enp1s0", 0), nwLink("enp2s0", 9000)},
			Addresses: []network.AddressSpecSpec{nwAddr("enp2s0", "192.0.2.10/24")},
			Routes:    []network.RouteSpecSpec{nwRoute("enp2s0", "", "192.0.2.1", 1024)},
			Operators: []network.OperatorSpecSpec{nwDHCP("enp1s0")},
		},
	},
	{
		name: "v2 match name, else the id",
		in: `version: 2
renderer: networkd
bonds: {}
ethernets:
  zeth:
    addresses: [10.1.0.2/16]
  byname:
    match:
      name: ens5
    dhcp4: yes
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("ens5", 0), nwLink("zeth", 0)},
			Addresses: []network.AddressSpecSpec{nwAddr("zeth", "10.1.0.2/16")},
			Operators: []network.OperatorSpecSpec{nwDHCP("ens5")},
		},
	},
	{
		name: "v2 routes: to default, metric, on-link, table, host route",
		in: `version: 2
ethernets:
  eth1:
    addresses:
      - 10.22.14.2/32
      - "2001:db8::5/64":
          lifetime: 0
    nameservers:
      search: [ foo.local, bar.local ]
      addresses: [8.8.8.8, "2001:4860:4860::8888", 8.8.8.8]
    routes:
      - to: default
        via: "192.168.14.1"
        metric: 100
        on-link: true
      - to: 10.10.0.0/16
        via: 192.168.14.254
        table: 100
      - to: "::/0"
        via: "2001:db8::1"
      - to: 172.16.0.1
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("eth1", 0)},
			Addresses: []network.AddressSpecSpec{nwAddr("eth1", "10.22.14.2/32"), nwAddr("eth1", "2001:db8::5/64")},
			Routes: func() []network.RouteSpecSpec {
				table := nwRoute("eth1", "10.10.0.0/16", "192.168.14.254", 1024)
				table.Table = 100

				return []network.RouteSpecSpec{
					nwRoute("eth1", "192.168.14.1/32", "", 100), nwRoute("eth1", "", "192.168.14.1", 100),
					table, nwRoute("eth1", "", "2001:db8::1", 1024), nwRoute("eth1", "172.16.0.1/32", "", 1024),
				}
			}(),
			Resolvers: nwDNS([]string{"8.8.8.8", "2001:4860:4860::8888"}, "foo.local", "bar.local"),
		},
	},
	{
		name: "v2 IPv6 static with gateway6",
		in: `version: 2
ethernets:
  eth0:
    addresses: ["2001:db8:1::10/64"]
    gateway6: "2001:db8:1::1"
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("eth0", 0)},
			Addresses: []network.AddressSpecSpec{nwAddr("eth0", "2001:db8:1::10/64")},
			Routes:    []network.RouteSpecSpec{nwRoute("eth0", "", "2001:db8:1::1", 1024)},
		},
	},
	{
		name: "v2 in the network wrapper",
		in: `network:
  version: 2
  ethernets:
    eth0:
      match:
        macaddress: "00:20:6e:1f:f9:a8"
      dhcp4: true
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("enp1s0", 0)},
			Operators: []network.OperatorSpecSpec{nwDHCP("enp1s0")},
		},
	},
	{
		name: "v1 in the network wrapper",
		in: `network:
  version: 1
  config:
  - type: physical
    name: eth0
    subnets: [{type: dhcp}]
`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("eth0", 0)},
			Operators: []network.OperatorSpecSpec{nwDHCP("eth0")},
		},
	},
	{
		name: "JSON",
		in:   `{"version": 2, "ethernets": {"eth0": {"dhcp4": true}}}`,
		want: network.PlatformConfigSpec{
			Links:     []network.LinkSpecSpec{nwLink("eth0", 0)},
			Operators: []network.OperatorSpecSpec{nwDHCP("eth0")},
		},
	},
	{
		name: "empty, FQDN hostname", in: "# nothing\n", hostname: "node1.example.com.",
		want: network.PlatformConfigSpec{Hostnames: nwHost("node1", "example.com")},
	},
	{
		name: "config disabled", in: "network: {config: disabled}\n", hostname: "node1",
		want: network.PlatformConfigSpec{Hostnames: nwHost("node1", "")},
	},
}

func TestParseNetworkConfig(t *testing.T) {
	for _, tc := range nwCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNetworkConfig([]byte(tc.in), tc.hostname, nwResolve)
			if err != nil {
				t.Fatal(err)
			}

			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", *got, tc.want)
			}
		})
	}
}

// nwV1 is a v1 config of one physical link eth0 with subnet (indented as
// a subnets item's fields).
func nwV1(subnet string) string {
	return "version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - " + strings.ReplaceAll(strings.TrimSpace(subnet), "\n", "\n    ") + "\n"
}

// nwV2 is a v2 config of one ethernets entry eth0 with fields.
func nwV2(fields string) string {
	return "version: 2\nethernets:\n  eth0:\n    " + strings.ReplaceAll(strings.TrimSpace(fields), "\n", "\n    ") + "\n"
}

var nwErrCases = []struct {
	name, in, hostname string
	want               []string
	nilResolver        bool
}{
	{name: "malformed YAML", in: "version: 2\nethernets: [", want: []string{"network-config: yaml:"}},
	{name: "not a mapping", in: "- a\n- b\n", want: []string{"network-config: ", "cannot unmarshal"}},
	{name: "unknown version", in: "version: 3\n", want: []string{"network-config: unknown version 3"}},
	{name: "no version", in: "config: []\n", want: []string{"network-config: no version"}},
	{name: "version not a number", in: "version: two\n", want: []string{"network-config: version:", "two"}},
	{name: "v1 bad CIDR", in: nwV1("type: static\naddress: 10.0.0.300/24"), want: []string{`network-config: eth0: address "10.0.0.300/24": `}},
	{name: "v2 bad CIDR", in: nwV2("addresses: [10.0.0.300/24]"), want: []string{`network-config: eth0: address "10.0.0.300/24": `}},
	{name: "v2 address without prefix", in: nwV2("addresses: [10.0.0.3]"), want: []string{`eth0: address "10.0.0.3"`}},
	{name: "v1 gateway not an IP", in: nwV1("type: static\naddress: 10.0.0.3/24\ngateway: router"), want: []string{`eth0: gateway "router"`}},
	{name: "v2 gateway4 not an IP", in: nwV2("gateway4: router"), want: []string{`eth0: gateway4 "router"`}},
	{name: "v2 gateway4 IPv6", in: nwV2("gateway4: 2001:db8::1"), want: []string{`gateway4 "2001:db8::1" is of the other address family`}},
	{name: "netmask not a mask", in: nwV1("type: static\naddress: 10.0.0.3\nnetmask: 255.0.255.0"), want: []string{`address "10.0.0.3"`, `netmask "255.0.255.0" is not a mask`}},
	{name: "netmask not an address", in: nwV1("type: static\naddress: 10.0.0.3\nnetmask: banana"), want: []string{`netmask "banana" is neither a mask nor a prefix length`}},
	{name: "prefix length out of range", in: nwV1("type: static6\naddress: 2001:db8::3\nnetmask: 129"), want: []string{`netmask "129": prefix length out of range`}},
	{name: "netmask of the other family", in: nwV1("type: static6\naddress: 2001:db8::3\nnetmask: 255.255.255.0"), want: []string{"is not of the family of 2001:db8::3"}},
	{name: "no netmask", in: nwV1("type: static\naddress: 10.0.0.3"), want: []string{`address "10.0.0.3": no prefix length and no netmask`}},
	{name: "CIDR and netmask disagree", in: nwV1("type: static\naddress: 10.0.0.3/24\nnetmask: 255.255.0.0"), want: []string{"disagrees"}},
	{name: "static without address", in: nwV1("type: static\ngateway: 10.0.0.1"), want: []string{"eth0: static subnet has no address"}},
	{name: "unknown subnet type", in: nwV1("type: static7"), want: []string{`eth0: subnet type "static7" is not supported`}},
	{
		name: "v1 unknown MAC", in: "version: 1\nconfig:\n- type: physical\n  name: eth0\n  mac_address: AA:BB:CC:DD:EE:FF\n",
		want: []string{"network-config: eth0: no link has MAC address aa:bb:cc:dd:ee:ff"},
	},
	{name: "v2 unknown MAC", in: nwV2("match: {macaddress: 'aa:bb:cc:dd:ee:ff'}"), want: []string{"network-config: eth0: no link has MAC address aa:bb:cc:dd:ee:ff"}},
	{name: "nil resolver", in: nwV2("match: {macaddress: '00:20:6e:1f:f9:a8'}"), nilResolver: true, want: []string{"no link has MAC address 00:20:6e:1f:f9:a8"}},
	{name: "bad MAC", in: nwV2("match: {macaddress: '02:xx:xx:xx:xx:xx'}"), want: []string{`MAC address "02:xx:xx:xx:xx:xx"`}},
	{name: "v2 bonds", in: "version: 2\nbonds:\n  bond0: {interfaces: [eth0]}\n", want: []string{"network-config: bonds are not supported"}},
	{name: "v2 vlans", in: "version: 2\nvlans:\n  vlan4: {id: 4, link: eth0}\n", want: []string{"network-config: vlans are not supported"}},
	{name: "v2 bridges", in: "network:\n  version: 2\n  bridges:\n    br0: {}\n", want: []string{"network-config: bridges are not supported"}},
	{name: "v1 bond", in: "version: 1\nconfig:\n- type: bond\n  name: bond0\n", want: []string{`network-config: bond0: type "bond" is not supported`}},
	{name: "v1 vlan", in: "version: 1\nconfig:\n- type: vlan\n  name: bond0.4\n", want: []string{`type "vlan" is not supported`}},
	{name: "v1 no type", in: "version: 1\nconfig:\n- name: eth0\n", want: []string{`eth0: type "" is not supported`}},
	{name: "v1 no name", in: "version: 1\nconfig:\n- type: physical\n", want: []string{"config[0]: physical entry has neither name nor mac_address"}},
	{name: "glob", in: nwV2("match: {name: 'en*'}"), want: []string{`match.name "en*" is a glob`}},
	{name: "driver", in: nwV2("match: {driver: virtio_net}"), want: []string{`match.driver "virtio_net"`}},
	{name: "link twice", in: "version: 2\nethernets:\n  a: {set-name: eth0}\n  b: {match: {name: eth0}}\n", want: []string{"b: link eth0 is configured twice"}},
	{name: "route mixes families", in: nwV2("routes: [{to: 10.0.0.0/8, via: 'fe80::1'}]"), want: []string{`eth0: route to "10.0.0.0/8": gateway fe80::1 is not of the destination's address family`}},
	{name: "default route without via", in: nwV2("routes: [{to: default}]"), want: []string{`route to "default": a default route needs via`}},
	{name: "bad route destination", in: nwV2("routes: [{to: 10.0.0.0/33, via: 10.0.0.1}]"), want: []string{`route to "10.0.0.0/33"`}},
	{name: "route via not an IP", in: nwV2("routes: [{to: default, via: router}]"), want: []string{`via "router"`}},
	{name: "route type", in: nwV2("routes: [{to: 10.0.0.0/8, type: blackhole}]"), want: []string{`type "blackhole" is not supported`}},
	{name: "routing-policy", in: nwV2("routing-policy: [{from: 10.0.0.0/8, table: 100}]"), want: []string{"eth0: routing-policy is not supported"}},
	{name: "v1 route without gateway", in: "version: 1\nconfig:\n- type: route\n  destination: 10.0.0.0/8\n", want: []string{`config[0]: route to "10.0.0.0/8": neither gateway nor link`}},
	{name: "v1 route bad netmask", in: nwV1("type: dhcp\nroutes: [{network: 10.0.0.0, netmask: 255.0.0.1, gateway: 10.0.0.1}]"), want: []string{`route to "10.0.0.0"`, "not a mask"}},
	{name: "v1 nameserver not an IP", in: "version: 1\nconfig:\n- type: nameserver\n  address: dns.example\n", want: []string{`config[0]: nameserver "dns.example"`}},
	{name: "v2 nameserver not an IP", in: nwV2("nameservers: {addresses: [dns.example]}"), want: []string{`eth0: nameserver "dns.example"`}},
	{
		name: "conflicting routes", in: "version: 2\nethernets:\n  a: {gateway4: 10.0.0.1}\n  b: {gateway4: 10.0.0.1}\n",
		want: []string{`b: route to default via 10.0.0.1 (metric 1024) out of "b" collides with the one out of "a"`},
	},
	{name: "negative mtu", in: nwV2("mtu: -1"), want: []string{"network-config: ethernets:", "-1"}},
	{name: "hostname without host", in: "", hostname: ".example.com", want: []string{`network-config: hostname ".example.com": no host label`}},
}

func TestParseNetworkConfigErrors(t *testing.T) {
	for _, tc := range nwErrCases {
		t.Run(tc.name, func(t *testing.T) {
			resolve := LinkResolver(nwResolve)
			if tc.nilResolver {
				resolve = nil
			}

			got, err := ParseNetworkConfig([]byte(tc.in), tc.hostname, resolve)
			if err == nil {
				t.Fatalf("no error; got %+v", *got)
			}

			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseMetaData(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     MetaData
	}{
		{"local-hostname", "instance-id: iid-1\nlocal-hostname: node-1\n", MetaData{InstanceID: "iid-1", Hostname: "node-1"}},
		{"only hostname", "instance-id: iid-1\nhostname: node-2\n", MetaData{InstanceID: "iid-1", Hostname: "node-2"}},
		{"local-hostname wins", "hostname: old\nlocal-hostname: new\n", MetaData{Hostname: "new"}},
		{"FQDN", "local-hostname: node-3.example.com\n", MetaData{Hostname: "node-3.example.com"}},
		{"JSON", `{"instance-id": "iid-4", "local-hostname": "node-4"}`, MetaData{InstanceID: "iid-4", Hostname: "node-4"}},
		{"numbers", "instance-id: 12345\nlocal-hostname: 42\n", MetaData{InstanceID: "12345", Hostname: "42"}},
		{"empty", "", MetaData{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMetaData([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}

			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}

	for _, in := range []string{"instance-id: [\n", "- a\n", "local-hostname: {a: b}\n"} {
		if _, err := ParseMetaData([]byte(in)); err == nil || !strings.HasPrefix(err.Error(), "meta-data: ") {
			t.Errorf("ParseMetaData(%q): error %v, want one about meta-data", in, err)
		}
	}
}

func FuzzParseNetworkConfig(f *testing.F) {
	for _, tc := range nwCases {
		f.Add([]byte(tc.in))
	}

	for _, tc := range nwErrCases {
		f.Add([]byte(tc.in))
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseNetworkConfig(b, "node.example.com", nwResolve)
		_, _ = ParseMetaData(b)
	})
}
