package network

import (
	"net/netip"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/hostdns"
)

// The ingress firewall, as Talos's NfTablesChainConfigController builds
// it from NetworkDefaultActionConfig and NetworkRuleConfig documents: an
// input chain that accepts loopback, established and related traffic,
// drops invalid traffic and applies the rules, with the default action as
// its policy; and a prerouting chain that applies the rules to new
// connections to the node's own addresses before kube-proxy's DNAT could
// forward them past the input chain (NodePorts). With ingress: block,
// what Kubernetes needs without a rule is let in: ICMP at 5 packets a
// second, traffic between pod and service subnets, and pods' DNS to the
// host DNS forwarder.

// Conntrack states (the ct state bits).
const (
	ctInvalid     = 1
	ctEstablished = 2
	ctRelated     = 4
	ctNew         = 8
)

// IP protocol numbers.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// Chain priorities: mangle + 10 for input, dstnat - 10 for prerouting.
const (
	ingressPriority    = -150 + 10
	preroutingPriority = -100 - 10
)

// trustedLinks are always let in (Talos's list: KubeSpan and SideroLink
// links are named so there).
var trustedLinks = []string{"lo", "siderolink", "kubespan"}

// fwChain is one chain of the firewall table.
type fwChain struct {
	name     string
	input    bool // the input hook; prerouting otherwise
	priority int32
	drop     bool // the policy; accept otherwise
	rules    []fwRule
}

// fwRule matches a packet when every match it sets holds; accept then
// decides.
type fwRule struct {
	iifname  string
	ctStates uint32
	// family is 4 or 6 when the rule is for one address family (its
	// address and ICMP matches are), 0 for both.
	family  int
	l4proto uint8
	// saddr and daddr, when set, are address ranges of the family; with
	// invert the rule matches addresses outside them.
	saddr, daddr *fwAddrs
	dports       []configs.PortRange
	icmpTypes    []byte
	// limit is a packets-per-second rate the rule matches under.
	limit  uint64
	accept bool
}

type fwAddrs struct {
	ranges []ipRange
	invert bool
}

// ipRange is an inclusive range of addresses of one family.
type ipRange struct{ from, to netip.Addr }

// firewallChains is the firewall the config asks for, nil for none (the
// default action accepts and there are no rules). nodeAddrs are the
// node's addresses, for the prerouting chain (none without them).
func firewallChains(cfg *configs.Config, nodeAddrs []netip.Prefix) []fwChain {
	block := configs.DocumentOf[*configs.NetworkDefaultActionConfig](cfg).Block()
	rules := configs.DocumentsOf[*configs.NetworkRuleConfig](cfg)

	if !block && len(rules) == 0 {
		return nil
	}

	ingress := fwChain{name: "ingress", input: true, priority: ingressPriority, drop: block}

	for _, l := range trustedLinks {
		ingress.rules = append(ingress.rules, fwRule{iifname: l, accept: true})
	}

	ingress.rules = append(ingress.rules,
		fwRule{ctStates: ctEstablished | ctRelated, accept: true},
		fwRule{ctStates: ctInvalid},
	)

	if block {
		ingress.rules = append(ingress.rules, kubernetesRules(cfg)...)
	}

	for _, r := range rules {
		ingress.rules = append(ingress.rules, ruleOf(r, block, 0)...)
	}

	chains := []fwChain{ingress}

	if len(nodeAddrs) == 0 {
		return chains
	}

	prerouting := fwChain{name: "prerouting", priority: preroutingPriority}

	for _, l := range trustedLinks {
		prerouting.rules = append(prerouting.rules, fwRule{iifname: l, accept: true})
	}

	// The node's addresses in the pod and service subnets (a CNI
	// bridge's) are Kubernetes's, as Talos filters them out.
	cluster := podAndServiceSubnets(cfg)

	var mine []netip.Prefix

	for _, a := range nodeAddrs {
		if !slices.ContainsFunc(cluster, func(p netip.Prefix) bool { return p.Contains(a.Addr()) }) {
			mine = append(mine, netip.PrefixFrom(a.Addr(), a.Addr().BitLen()))
		}
	}

	// Traffic to other addresses (pods, services) is not the node's.
	for _, fam := range []int{4, 6} {
		prerouting.rules = append(prerouting.rules, fwRule{family: fam, daddr: &fwAddrs{ranges: ranges(mine, nil, fam), invert: true}, accept: true})
	}

	for _, r := range rules {
		prerouting.rules = append(prerouting.rules, ruleOf(r, block, ctNew)...)
	}

	if block {
		prerouting.rules = append(prerouting.rules, fwRule{ctStates: ctNew, l4proto: protoTCP}, fwRule{ctStates: ctNew, l4proto: protoUDP})
	}

	return append(chains, prerouting)
}

// kubernetesRules are what ingress: block lets in without a rule.
func kubernetesRules(cfg *configs.Config) []fwRule {
	out := []fwRule{
		// ICMP's timestamp and address mask requests and replies tell
		// too much about the node.
		{family: 4, l4proto: protoICMP, icmpTypes: []byte{13, 14, 17, 18}},
		{family: 4, l4proto: protoICMP, limit: 5, accept: true},
		{family: 6, l4proto: protoICMPv6, limit: 5, accept: true},
	}

	cluster := podAndServiceSubnets(cfg)

	if _, forward := configs.HostDNSEnabled(cfg); forward {
		dns := []netip.Prefix{netip.PrefixFrom(hostdns.Address, 32)}

		for _, proto := range []uint8{protoUDP, protoTCP} {
			for _, fam := range []int{4, 6} {
				src, dst := ranges(cluster, nil, fam), ranges(dns, nil, fam)
				if len(src) > 0 && len(dst) > 0 {
					out = append(out, fwRule{family: fam, saddr: &fwAddrs{ranges: src}, daddr: &fwAddrs{ranges: dst}, l4proto: proto,
						dports: []configs.PortRange{{Lo: 53, Hi: 53}}, accept: true})
				}
			}
		}
	}

	for _, fam := range []int{4, 6} {
		if r := ranges(cluster, nil, fam); len(r) > 0 {
			out = append(out, fwRule{family: fam, saddr: &fwAddrs{ranges: r}, daddr: &fwAddrs{ranges: r}, accept: true})
		}
	}

	return out
}

// ruleOf is a NetworkRuleConfig's rule for each address family it
// concerns. ingress: block accepts its subnets; accept drops everyone
// else. ct limits it to connections in those states (0 for any).
func ruleOf(r *configs.NetworkRuleConfig, block bool, ct uint32) []fwRule {
	proto := r.Protocol()
	if proto == 0 || len(r.PortSelector.Ports) == 0 {
		return nil // refused by validation
	}

	include, except := r.Subnets()

	var out []fwRule

	for _, fam := range []int{4, 6} {
		allowed := ranges(include, except, fam)

		switch {
		case block && len(allowed) == 0:
			continue // nobody of the family is let in by it
		case !block && coversAll(allowed, fam):
			continue // nobody of the family is kept out by it
		}

		out = append(out, fwRule{family: fam, ctStates: ct, saddr: &fwAddrs{ranges: allowed, invert: !block},
			l4proto: proto, dports: slices.Clone(r.PortSelector.Ports), accept: block})
	}

	return out
}

// podAndServiceSubnets are the cluster's pod and service subnets, with
// Kubernetes's defaults when the config names none.
func podAndServiceSubnets(cfg *configs.Config) []netip.Prefix {
	pods, services := []string{"10.244.0.0/16"}, []string{"10.96.0.0/12"}

	if cfg != nil && cfg.Cluster != nil && cfg.Cluster.Network != nil {
		if n := cfg.Cluster.Network; len(n.PodSubnets) > 0 {
			pods = n.PodSubnets
		}

		if n := cfg.Cluster.Network; len(n.ServiceSubnets) > 0 {
			services = n.ServiceSubnets
		}
	}

	var out []netip.Prefix

	for _, s := range slices.Concat(pods, services) {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}

	return out
}

// ranges is the addresses of family (4 or 6) in include and not in
// exclude, as sorted, disjoint ranges.
func ranges(include, exclude []netip.Prefix, family int) []ipRange {
	var in []ipRange

	for _, p := range include {
		if (family == 4) == p.Addr().Is4() {
			in = append(in, prefixRange(p))
		}
	}

	in = mergeRanges(in)

	for _, p := range exclude {
		if (family == 4) == p.Addr().Is4() {
			in = subtract(in, prefixRange(p))
		}
	}

	return in
}

func prefixRange(p netip.Prefix) ipRange {
	p = p.Masked()
	b := p.Addr().AsSlice()

	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}

	last, _ := netip.AddrFromSlice(b)

	return ipRange{from: p.Addr(), to: last}
}

func mergeRanges(in []ipRange) []ipRange {
	slices.SortFunc(in, func(a, b ipRange) int { return a.from.Compare(b.from) })

	var out []ipRange

	for _, r := range in {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if next := last.to.Next(); next.IsValid() && r.from.Compare(next) <= 0 || !next.IsValid() {
				if r.to.Compare(last.to) > 0 {
					last.to = r.to
				}

				continue
			}
		}

		out = append(out, r)
	}

	return out
}

// subtract removes x from sorted, disjoint ranges.
func subtract(in []ipRange, x ipRange) []ipRange {
	var out []ipRange

	for _, r := range in {
		if x.to.Compare(r.from) < 0 || x.from.Compare(r.to) > 0 {
			out = append(out, r)
			continue
		}

		if x.from.Compare(r.from) > 0 {
			out = append(out, ipRange{from: r.from, to: x.from.Prev()})
		}

		if x.to.Compare(r.to) < 0 {
			out = append(out, ipRange{from: x.to.Next(), to: r.to})
		}
	}

	return out
}

// coversAll reports whether the ranges are every address of the family.
func coversAll(rs []ipRange, family int) bool {
	all := prefixRange(netip.MustParsePrefix("0.0.0.0/0"))
	if family == 6 {
		all = prefixRange(netip.MustParsePrefix("::/0"))
	}

	return len(rs) == 1 && rs[0] == all
}
