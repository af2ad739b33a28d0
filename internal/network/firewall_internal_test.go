package network

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func r(from, to string) ipRange {
	return ipRange{from: netip.MustParseAddr(from), to: netip.MustParseAddr(to)}
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}

	return out
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		name             string
		include, exclude []netip.Prefix
		family           int
		want             []ipRange
	}{
		{name: "one subnet", include: prefixes("10.0.0.0/8"), family: 4, want: []ipRange{r("10.0.0.0", "10.255.255.255")}},
		{name: "the other family's are left out", include: prefixes("10.0.0.0/8", "2001:db8::/32"), family: 6,
			want: []ipRange{r("2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")}},
		{name: "overlapping and adjacent subnets merge", include: prefixes("10.0.1.0/24", "10.0.0.0/16", "10.1.0.0/16"), family: 4,
			want: []ipRange{r("10.0.0.0", "10.1.255.255")}},
		{name: "an except splits", include: prefixes("10.5.0.0/24"), exclude: prefixes("10.5.0.3/32"), family: 4,
			want: []ipRange{r("10.5.0.0", "10.5.0.2"), r("10.5.0.4", "10.5.0.255")}},
		{name: "an except at the edge", include: prefixes("10.5.0.0/24"), exclude: prefixes("10.5.0.0/25"), family: 4,
			want: []ipRange{r("10.5.0.128", "10.5.0.255")}},
		{name: "an except of all", include: prefixes("10.5.0.0/24"), exclude: prefixes("10.0.0.0/8"), family: 4},
		{name: "everything", include: prefixes("0.0.0.0/0"), family: 4, want: []ipRange{r("0.0.0.0", "255.255.255.255")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ranges(tc.include, tc.exclude, tc.family); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ranges = %v, want %v", got, tc.want)
			}
		})
	}
}

func rule(t *testing.T, docs string) *configs.Config {
	t.Helper()

	cfg, err := configs.Decode([]byte(docs))
	if err != nil {
		t.Fatal(err)
	}

	return cfg
}

// The rules a NetworkRuleConfig becomes, per address family, as Talos
// builds them: with block, an accept for the family's allowed sources
// (none when it has none); with accept, a drop for every other source
// (none when it allows all, every source when it names none of the
// family).
func TestRuleOf(t *testing.T) {
	const doc = "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: r\nportSelector:\n  ports: [22]\n  protocol: tcp\ningress:\n"

	ssh := []configs.PortRange{{Lo: 22, Hi: 22}}

	for _, tc := range []struct {
		name    string
		ingress string
		block   bool
		want    []fwRule
	}{
		{name: "block: IPv4 only", ingress: "  - subnet: 10.0.0.0/8\n", block: true, want: []fwRule{
			{family: 4, saddr: &fwAddrs{ranges: []ipRange{r("10.0.0.0", "10.255.255.255")}}, l4proto: protoTCP, dports: ssh, accept: true},
		}},
		{name: "accept: IPv4 only drops all IPv6", ingress: "  - subnet: 10.0.0.0/8\n", want: []fwRule{
			{family: 4, saddr: &fwAddrs{ranges: []ipRange{r("10.0.0.0", "10.255.255.255")}, invert: true}, l4proto: protoTCP, dports: ssh},
			{family: 6, saddr: &fwAddrs{invert: true}, l4proto: protoTCP, dports: ssh},
		}},
		{name: "accept: everyone of a family", ingress: "  - subnet: 0.0.0.0/0\n  - subnet: ::/0\n"},
		{name: "block: nobody", ingress: "", block: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ruleOf(configs.DocumentOf[*configs.NetworkRuleConfig](rule(t, doc+tc.ingress)), tc.block, 0)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rules:\ngot  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Without a firewall document there is no firewall; the node's addresses
// in the pod subnet are not the node's for the prerouting chain.
func TestFirewallChains(t *testing.T) {
	if c := firewallChains(rule(t, "version: v1alpha1\nmachine:\n  type: worker\n"), prefixes("10.5.0.2/24")); c != nil {
		t.Errorf("chains without documents: %+v", c)
	}

	cfg := rule(t, "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\ningress: block\n")

	if c := firewallChains(cfg, nil); len(c) != 1 || c[0].name != "ingress" || !c[0].drop {
		t.Errorf("without node addresses: %+v", c)
	}

	c := firewallChains(cfg, prefixes("10.5.0.2/24", "10.244.0.1/24"))
	if len(c) != 2 || c[1].name != "prerouting" {
		t.Fatalf("chains: %+v", c)
	}

	mine := c[1].rules[len(trustedLinks)]
	if mine.family != 4 || !mine.daddr.invert || !reflect.DeepEqual(mine.daddr.ranges, []ipRange{r("10.5.0.2", "10.5.0.2")}) {
		t.Errorf("the node's IPv4 addresses in prerouting: %+v %+v", mine, mine.daddr)
	}
}
