package configs

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// NetworkRuleConfig is Talos's NetworkRuleConfig: an ingress firewall
// rule, named: traffic from the ingress subnets to the selected ports is
// accepted when the default action blocks, and traffic from elsewhere to
// them dropped when it accepts. networkd reads it from the document.
type NetworkRuleConfig struct {
	Name         string           `yaml:"name"`
	PortSelector RulePortSelector `yaml:"portSelector"`
	Ingress      []IngressRule    `yaml:"ingress" merge:"replace"`
}

// RulePortSelector selects the ports a rule is about.
type RulePortSelector struct {
	Ports []PortRange `yaml:"ports" merge:"replace"`
	// Protocol is tcp or udp.
	Protocol string `yaml:"protocol"`
}

// IngressRule is a subnet traffic may come from, but for its except
// subnet.
type IngressRule struct {
	Subnet string `yaml:"subnet"`
	Except string `yaml:"except,omitempty"`
}

// PortRange is a port (53) or an inclusive range of ports ("8000-9000").
type PortRange struct {
	Lo, Hi uint16
}

// UnmarshalText reads "53" or "8000-9000".
func (p *PortRange) UnmarshalText(b []byte) error {
	s := string(b)

	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}

	l, errLo := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	h, errHi := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)

	if errLo != nil || errHi != nil {
		return fmt.Errorf("invalid port range %q: want a port (53) or a range (8000-9000) of ports up to 65535", s)
	}

	p.Lo, p.Hi = uint16(l), uint16(h)

	return nil
}

// MarshalYAML writes a single port as a number, as Talos does.
func (p PortRange) MarshalYAML() (any, error) {
	if p.Lo == p.Hi {
		return p.Lo, nil
	}

	return p.String(), nil
}

func (p PortRange) String() string {
	if p.Lo == p.Hi {
		return strconv.Itoa(int(p.Lo))
	}

	return fmt.Sprintf("%d-%d", p.Lo, p.Hi)
}

// Kind implements Document.
func (*NetworkRuleConfig) Kind() string { return "NetworkRuleConfig" }

// DocumentName implements NamedDocument.
func (r *NetworkRuleConfig) DocumentName() string { return r.Name }

// Protocol is the rule's protocol number (6 for tcp, 17 for udp), 0
// when it is neither.
func (r *NetworkRuleConfig) Protocol() uint8 {
	switch strings.ToLower(r.PortSelector.Protocol) {
	case "tcp":
		return 6
	case "udp":
		return 17
	}

	return 0
}

// Subnets are the ingress subnets and their except subnets (invalid ones
// are left out: check refuses them).
func (r *NetworkRuleConfig) Subnets() (include, except []netip.Prefix) {
	for _, in := range r.Ingress {
		if p, err := netip.ParsePrefix(in.Subnet); err == nil {
			include = append(include, p.Masked())
		}

		if p, err := netip.ParsePrefix(in.Except); err == nil {
			except = append(except, p.Masked())
		}
	}

	return include, except
}

func (r *NetworkRuleConfig) check(v *validator, path string) {
	if r.Name == "" {
		v.errorf(path+".name", "name is required")
	}

	ps := path + ".portSelector"

	switch strings.ToLower(r.PortSelector.Protocol) {
	case "tcp", "udp":
	case "icmp", "icmpv6":
		v.errorf(ps+".protocol", "protocol %s has no ports: a NetworkRuleConfig selects tcp or udp ports "+
			"(with ingress: block, ICMP is let in at 5 packets a second)", r.PortSelector.Protocol)
	case "":
		v.errorf(ps+".protocol", "protocol must be specified: tcp or udp")
	default:
		v.errorf(ps+".protocol", "unsupported protocol %q: want tcp or udp", r.PortSelector.Protocol)
	}

	if len(r.PortSelector.Ports) == 0 {
		v.errorf(ps+".ports", "portSelector.ports is required")
	}

	// Talos's PortRanges.Validate: ranges in order, none overlapping
	// (compared with every range before, not only the one just before:
	// the kernel refuses overlapping set elements).
	sorted := slices.Clone(r.PortSelector.Ports)
	slices.SortStableFunc(sorted, func(a, b PortRange) int { return cmp.Compare(a.Lo, b.Lo) })

	var widest *PortRange // of those before, the one reaching highest

	for i, p := range sorted {
		switch {
		case p.Lo > p.Hi:
			v.errorf(ps+".ports", "invalid port range: %d-%d (the first port is above the last)", p.Lo, p.Hi)

			continue
		case widest != nil && p.Lo <= widest.Hi:
			v.errorf(ps+".ports", "invalid port range: %s, overlaps with %s", p, widest)
		}

		if widest == nil || p.Hi > widest.Hi {
			widest = &sorted[i]
		}
	}

	for i, in := range r.Ingress {
		ip := indexPath(path+".ingress", i)

		if _, err := netip.ParsePrefix(in.Subnet); err != nil {
			v.errorf(ip+".subnet", "invalid subnet %q: want a CIDR (192.168.0.0/16, 10.0.0.5/32)", in.Subnet)
		}

		if in.Except != "" {
			if _, err := netip.ParsePrefix(in.Except); err != nil {
				v.errorf(ip+".except", "invalid except %q: want a CIDR (192.168.0.3/32)", in.Except)
			}
		}
	}
}

// fold: nothing; networkd reads the document.
func (*NetworkRuleConfig) fold(*folding) {}
