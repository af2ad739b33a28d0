package nocloud

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// v2Ethernet is one netplan ethernets entry; keys it leaves out (dhcp6,
// accept-ra, optional, ...) change no address talosbox would set.
type v2Ethernet struct {
	Match struct {
		MACAddress string     `yaml:"macaddress"`
		Name       string     `yaml:"name"`
		Driver     stringList `yaml:"driver"`
	} `yaml:"match"`
	SetName     string      `yaml:"set-name"`
	DHCP4       bool        `yaml:"dhcp4"`
	Addresses   []v2Address `yaml:"addresses"`
	Gateway4    string      `yaml:"gateway4"`
	Gateway6    string      `yaml:"gateway6"`
	Routes      []v2Route   `yaml:"routes"`
	Nameservers struct {
		Addresses stringList `yaml:"addresses"`
		Search    stringList `yaml:"search"`
	} `yaml:"nameservers"`
	MTU           uint32    `yaml:"mtu"`
	RoutingPolicy yaml.Node `yaml:"routing-policy"`
}

type v2Route struct {
	To     string `yaml:"to"`
	Via    string `yaml:"via"`
	From   string `yaml:"from"`
	Metric uint32 `yaml:"metric"`
	Table  uint32 `yaml:"table"`
	OnLink bool   `yaml:"on-link"`
	Type   string `yaml:"type"`
}

// v2Address is a CIDR address; netplan also writes one as the single key
// of a map of its options (lifetime, label), which change nothing here.
type v2Address string

func (a *v2Address) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		n = n.Content[0]
	}

	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}

	*a = v2Address(s)

	return nil
}

func (bld *builder) v2(doc map[string]yaml.Node) error {
	// Bonds, VLANs, bridges and the rest carry the addresses meant for the
	// node: configuring the ethernets without them would leave it
	// half-addressed.
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if k != "version" && k != "renderer" && k != "ethernets" && !empty(doc[k]) {
			return fmt.Errorf("%s are not supported (only ethernets are)", k)
		}
	}

	var eths map[string]v2Ethernet

	if n, ok := doc["ethernets"]; ok {
		if err := n.Decode(&eths); err != nil {
			return fmt.Errorf("ethernets: %w", err)
		}
	}

	for _, id := range slices.Sorted(maps.Keys(eths)) {
		if err := bld.v2Ethernet(id, eths[id]); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
	}

	return nil
}

func (bld *builder) v2Ethernet(id string, eth v2Ethernet) error {
	name, err := bld.v2Name(id, eth)
	if err != nil {
		return err
	}

	if !empty(eth.RoutingPolicy) {
		return errors.New("routing-policy is not supported")
	}

	if err := bld.link(name, eth.MTU); err != nil {
		return err
	}

	if eth.DHCP4 {
		bld.dhcp4(name)
	}

	for _, a := range eth.Addresses {
		p, err := netip.ParsePrefix(strings.TrimSpace(string(a)))
		if err != nil {
			return fmt.Errorf("address %q: %w", a, err)
		}

		bld.address(name, p)
	}

	for _, g := range []struct {
		key, gw string
		v4      bool
	}{{"gateway4", eth.Gateway4, true}, {"gateway6", eth.Gateway6, false}} {
		if g.gw == "" {
			continue
		}

		gw, err := netip.ParseAddr(strings.TrimSpace(g.gw))
		if err != nil {
			return fmt.Errorf("%s %q: %w", g.key, g.gw, err)
		}

		if gw.Is4() != g.v4 {
			return fmt.Errorf("%s %q is of the other address family", g.key, g.gw)
		}

		rt, err := newRoute(name, netip.Prefix{}, gw, 0)
		if err != nil {
			return err
		}

		if err := bld.route(rt); err != nil {
			return err
		}
	}

	for _, r := range eth.Routes {
		if err := bld.v2Route(name, r); err != nil {
			return fmt.Errorf("route to %q: %w", r.To, err)
		}
	}

	return bld.nameservers(eth.Nameservers.Addresses, eth.Nameservers.Search)
}

// v2Name is the link an ethernets entry configures. A MAC address names
// the kernel's link, whatever set-name says: talosbox renames no links, so
// the link netplan would have renamed keeps its kernel name. set-name then
// names a link matched otherwise.
func (bld *builder) v2Name(id string, eth v2Ethernet) (string, error) {
	m := eth.Match

	switch {
	case m.MACAddress != "":
		return bld.byMAC(m.MACAddress)
	case eth.SetName != "":
		return eth.SetName, nil
	case m.Name != "":
		// A glob may match several links or none: there is no one
		// name to configure.
		if strings.ContainsAny(m.Name, "*?[") {
			return "", fmt.Errorf("match.name %q is a glob: globs are not supported", m.Name)
		}

		return m.Name, nil
	case len(m.Driver) > 0:
		return "", fmt.Errorf("match.driver %q: matching by driver is not supported", strings.Join(m.Driver, ","))
	}

	return id, nil
}

func (bld *builder) v2Route(link string, r v2Route) error {
	if r.Type != "" && r.Type != "unicast" {
		return fmt.Errorf("type %q is not supported", r.Type)
	}

	var (
		gw, src netip.Addr
		dst     netip.Prefix
		err     error
	)

	if r.Via != "" {
		if gw, err = netip.ParseAddr(strings.TrimSpace(r.Via)); err != nil {
			return fmt.Errorf("via %q: %w", r.Via, err)
		}
	}

	switch to := strings.TrimSpace(r.To); {
	case to == "default":
		if !gw.IsValid() {
			return errors.New("a default route needs via")
		}
	case to == "":
		return errors.New("no to")
	case strings.Contains(to, "/"):
		if dst, err = netip.ParsePrefix(to); err != nil {
			return err
		}
	default: // a host route
		a, err := netip.ParseAddr(to)
		if err != nil {
			return err
		}

		dst = netip.PrefixFrom(a.WithZone(""), a.BitLen())
	}

	if r.From != "" {
		if src, err = netip.ParseAddr(strings.TrimSpace(r.From)); err != nil {
			return fmt.Errorf("from %q: %w", r.From, err)
		}
	}

	rt, err := newRoute(link, dst, gw, r.Metric)
	if err != nil {
		return err
	}

	rt.Source = src
	if r.Table != 0 {
		rt.Table = network.RoutingTable(r.Table)
	}

	// on-link: the gateway lies outside the link's subnets, so the kernel
	// needs a route to it out of the link before the route through it.
	if r.OnLink && gw.IsValid() {
		hop, err := newRoute(link, netip.PrefixFrom(gw.WithZone(""), gw.BitLen()), netip.Addr{}, r.Metric)
		if err != nil {
			return err
		}

		hop.Table = rt.Table
		if err := bld.route(hop); err != nil {
			return err
		}
	}

	return bld.route(rt)
}
