package etcdargs

import (
	"fmt"
	"net/netip"
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
func Apply(extraArgs configs.Args) (Settings, map[string]error) {
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

// filterAddrs keeps the addresses subnets select (configs.FilterAddrs,
// the member's rule); subnets that do not parse select nothing.
func filterAddrs(addrs []netip.Addr, subnets []string) []netip.Addr {
	out, err := configs.FilterAddrs(addrs, subnets)
	if err != nil {
		return nil
	}

	return out
}

// CheckSubnet refuses a cluster.etcd.{advertised,listen}Subnets entry the
// member cannot parse: its address selection fails on it, whatever the
// node's addresses.
func CheckSubnet(s string) error {
	_, err := configs.ParseSubnetOrAddress(strings.TrimSpace(strings.TrimPrefix(s, "!")))

	return err
}

// URLs are https://addr:port, comma-separated, IPv6 bracketed.
func URLs(addrs []netip.Addr, port int) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = "https://" + netip.AddrPortFrom(a.Unmap(), uint16(port)).String()
	}

	return strings.Join(out, ",")
}
