package configs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ParseSubnetOrAddress reads a subnet of cluster.etcd.advertisedSubnets
// and listenSubnets: a CIDR, or a single address (a VIP is often given
// so), without its "!". It is the rule for both validation and the etcd
// member that picks its addresses with it (FilterAddrs).
func ParseSubnetOrAddress(s string) (netip.Prefix, error) {
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

// FilterAddrs keeps the addresses subnets select, as Talos does with
// cluster.etcd.advertisedSubnets and listenSubnets: each subnet is a CIDR
// or a single address, a leading "!" excludes it, and an address qualifies
// when no exclusion contains it and, if any inclusion is listed, one
// contains it. No subnets keep them all; the order of addrs is kept.
func FilterAddrs(addrs []netip.Addr, subnets []string) ([]netip.Addr, error) {
	var include, exclude []netip.Prefix

	for _, s := range subnets {
		negate := strings.HasPrefix(s, "!")

		p, err := ParseSubnetOrAddress(strings.TrimSpace(strings.TrimPrefix(s, "!")))
		if err != nil {
			return nil, err
		}

		if negate {
			exclude = append(exclude, p)
		} else {
			include = append(include, p)
		}
	}

	contains := func(ps []netip.Prefix, a netip.Addr) bool {
		return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}

	out := make([]netip.Addr, 0, len(addrs))

	for _, a := range addrs {
		a = a.Unmap()
		if contains(exclude, a) || (len(include) > 0 && !contains(include, a)) {
			continue
		}

		out = append(out, a)
	}

	return out, nil
}
