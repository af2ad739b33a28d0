package render

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// NodeIPConfigFor is how the node IP is picked, as Talos picks it:
// validSubnets from machine.kubelet.nodeIP, else every address of the
// service CIDRs' families; the pod and service CIDRs are excluded.
func NodeIPConfigFor(validSubnets []string, cl Cluster) k8s.NodeIPConfigSpec {
	spec := k8s.NodeIPConfigSpec{ValidSubnets: validSubnets}

	if len(spec.ValidSubnets) == 0 {
		v4, v6 := false, false

		for _, s := range cl.ServiceSubnets {
			if p, err := netip.ParsePrefix(s); err == nil {
				v4, v6 = v4 || p.Addr().Is4(), v6 || p.Addr().Is6()
			}
		}

		if v4 {
			spec.ValidSubnets = append(spec.ValidSubnets, "0.0.0.0/0")
		}

		if v6 {
			spec.ValidSubnets = append(spec.ValidSubnets, "::/0")
		}
	}

	spec.ExcludeSubnets = append(append([]string{}, cl.PodSubnets...), cl.ServiceSubnets...)

	return spec
}

// PickNodeIPs applies a NodeIPConfig to the node's addresses: the first
// IPv4 and the first IPv6 address that match a valid subnet ("!cidr" is a
// negative match) and no excluded one. skipped are the other matches.
func PickNodeIPs(cfg k8s.NodeIPConfigSpec, addrs []netip.Addr) (picked, skipped []netip.Addr, err error) {
	var include, exclude []netip.Prefix

	for _, s := range cfg.ValidSubnets {
		neg := strings.HasPrefix(s, "!")

		p, perr := netip.ParsePrefix(strings.TrimPrefix(s, "!"))
		if perr != nil {
			return nil, nil, fmt.Errorf("machine.kubelet.nodeIP.validSubnets: %q: %w", s, perr)
		}

		if neg {
			exclude = append(exclude, p)
		} else {
			include = append(include, p)
		}
	}

	for _, s := range cfg.ExcludeSubnets {
		p, perr := netip.ParsePrefix(strings.TrimPrefix(s, "!"))
		if perr != nil {
			return nil, nil, fmt.Errorf("exclude subnet %q: %w", s, perr)
		}

		exclude = append(exclude, p)
	}

	contains := func(ps []netip.Prefix, a netip.Addr) bool {
		for _, p := range ps {
			if p.Contains(a) {
				return true
			}
		}

		return false
	}

	var have4, have6 bool

	for _, a := range addrs {
		a = a.Unmap()
		if !contains(include, a) || contains(exclude, a) {
			continue
		}

		switch {
		case a.Is4() && !have4:
			have4 = true
		case a.Is6() && !have6:
			have6 = true
		default:
			skipped = append(skipped, a)
			continue
		}

		picked = append(picked, a)
	}

	return picked, skipped, nil
}
