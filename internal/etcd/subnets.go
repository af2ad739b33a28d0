package etcd

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/talosbox/talosbox/configs"
)

// Addresses are the member's addresses picked from the node's.
type Addresses struct {
	// Advertised go into the advertised peer and client URLs.
	Advertised []netip.Addr
	// ListenPeer and ListenClient are bound; ListenClient also has
	// loopback when subnets narrow it, so local clients always reach it.
	ListenPeer   []netip.Addr
	ListenClient []netip.Addr
}

// SelectAddresses picks the member's addresses from the node's, as Talos does
// with cluster.etcd.advertisedSubnets and listenSubnets. Each subnet is a CIDR
// or a bare IP; a leading "!" excludes it. An address qualifies when no
// exclusion contains it and, if any inclusion is listed, one contains it.
//
// Without advertisedSubnets only the first address is advertised: etcd
// members dial every advertised URL, and a node's secondary addresses are
// often not reachable from the other nodes. Without listenSubnets the member
// listens on the unspecified address ([::] when any node address is IPv6).
// The order of nodeAddrs is kept.
func SelectAddresses(nodeAddrs []netip.Addr, advertisedSubnets, listenSubnets []string) (Addresses, error) {
	var out Addresses

	if len(nodeAddrs) == 0 {
		return out, errors.New("etcd addresses: the node has no addresses")
	}

	advertised, err := FilterAddrs(nodeAddrs, advertisedSubnets)
	if err != nil {
		return out, fmt.Errorf("etcd addresses: advertisedSubnets: %w", err)
	}

	if len(advertisedSubnets) == 0 {
		advertised = advertised[:1]
	}

	if len(advertised) == 0 {
		return out, fmt.Errorf("etcd addresses: no node address matches advertisedSubnets %v", advertisedSubnets)
	}

	out.Advertised = advertised

	unspecified, loopback := netip.IPv4Unspecified(), netip.MustParseAddr("127.0.0.1")

	for _, a := range nodeAddrs {
		if a.Is6() && !a.Is4In6() {
			unspecified, loopback = netip.IPv6Unspecified(), netip.IPv6Loopback()

			break
		}
	}

	if len(listenSubnets) == 0 {
		out.ListenPeer = []netip.Addr{unspecified}
		out.ListenClient = []netip.Addr{unspecified}

		return out, nil
	}

	listen, err := FilterAddrs(nodeAddrs, listenSubnets)
	if err != nil {
		return out, fmt.Errorf("etcd addresses: listenSubnets: %w", err)
	}

	if len(listen) == 0 {
		return out, fmt.Errorf("etcd addresses: no node address matches listenSubnets %v", listenSubnets)
	}

	out.ListenPeer = listen
	out.ListenClient = append([]netip.Addr{loopback}, listen...)

	return out, nil
}

// FilterAddrs keeps the addresses selected by subnets (see SelectAddresses):
// configs.FilterAddrs, the rule validation checks the subnets by.
func FilterAddrs(addrs []netip.Addr, subnets []string) ([]netip.Addr, error) {
	return configs.FilterAddrs(addrs, subnets)
}

// URLs returns https://addr:port for each address, bracketing IPv6.
func URLs(addrs []netip.Addr, port int) []string {
	out := make([]string, 0, len(addrs))

	for _, a := range addrs {
		out = append(out, "https://"+netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
	}

	return out
}
