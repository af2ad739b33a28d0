package etcdargs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// The member's ports.
const (
	ClientPort = 2379
	PeerPort   = 2380
)

// Settings are what extraArgs make of the member's configuration
// (configs.EtcdSettings).
type Settings = configs.EtcdSettings

// Apply reads every extraArgs entry and applies them in key order, as the
// member does (configs.ApplyEtcdArgs, the rule config validation applies).
func Apply(extraArgs map[string]string) (Settings, map[string]error) {
	return configs.ApplyEtcdArgs(extraArgs)
}

// Addresses are the member's addresses, as internal/etcd.SelectAddresses
// picks them from the node's.
type Addresses struct {
	Advertised, ListenPeer, ListenClient []netip.Addr
}

// Select picks the member's addresses from the node's; what the addresses
// cannot give (none matches a subnet list) is a note, since a real node's
// addresses differ. The subnets must pass CheckSubnet.
func Select(ips []netip.Addr, advertisedSubnets, listenSubnets []string) (a Addresses, notes []string) {
	advertised := filterAddrs(ips, advertisedSubnets)
	if len(advertisedSubnets) == 0 && len(advertised) > 0 {
		advertised = advertised[:1]
	}

	if len(advertised) == 0 {
		notes = append(notes, fmt.Sprintf("no address matches cluster.etcd.advertisedSubnets %v: the advertised URLs are left empty", advertisedSubnets))
	}

	a.Advertised = advertised

	unspecified, loopback := netip.IPv4Unspecified(), netip.MustParseAddr("127.0.0.1")

	for _, ip := range ips {
		if ip.Is6() && !ip.Is4In6() {
			unspecified, loopback = netip.IPv6Unspecified(), netip.IPv6Loopback()

			break
		}
	}

	if len(listenSubnets) == 0 {
		a.ListenPeer, a.ListenClient = []netip.Addr{unspecified}, []netip.Addr{unspecified}

		return a, notes
	}

	listen := filterAddrs(ips, listenSubnets)
	if len(listen) == 0 {
		notes = append(notes, fmt.Sprintf("no address matches cluster.etcd.listenSubnets %v: the member listens on loopback alone", listenSubnets))
	}

	a.ListenPeer, a.ListenClient = listen, append([]netip.Addr{loopback}, listen...)

	return a, notes
}

// filterAddrs keeps the addresses subnets select ("!" excludes); a subnet
// that does not parse selects nothing.
func filterAddrs(addrs []netip.Addr, subnets []string) []netip.Addr {
	var include, exclude []netip.Prefix

	for _, s := range subnets {
		p, err := parseSubnet(strings.TrimSpace(strings.TrimPrefix(s, "!")))
		if err != nil {
			continue
		}

		if strings.HasPrefix(s, "!") {
			exclude = append(exclude, p)
		} else {
			include = append(include, p)
		}
	}

	contains := func(ps []netip.Prefix, a netip.Addr) bool {
		return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}

	var out []netip.Addr

	for _, a := range addrs {
		a = a.Unmap()
		if contains(exclude, a) || (len(include) > 0 && !contains(include, a)) {
			continue
		}

		out = append(out, a)
	}

	return out
}

// CheckSubnet refuses a cluster.etcd.{advertised,listen}Subnets entry the
// member cannot parse: its address selection fails on it, whatever the
// node's addresses.
func CheckSubnet(s string) error {
	_, err := parseSubnet(strings.TrimSpace(strings.TrimPrefix(s, "!")))

	return err
}

// parseSubnet is internal/etcd's: a CIDR, or a single address (a VIP is
// often given so).
func parseSubnet(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("subnet %q: %w", s, err)
		}

		return p.Masked(), nil
	}

	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("subnet %q: not a CIDR or IP address", s)
	}

	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// URLs are https://addr:port, comma-separated, IPv6 bracketed.
func URLs(addrs []netip.Addr, port int) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = "https://" + netip.AddrPortFrom(a.Unmap(), uint16(port)).String()
	}

	return strings.Join(out, ",")
}
