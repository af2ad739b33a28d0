package nocloud

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"

	"gopkg.in/yaml.v3"
)

// v1Entry is one item of a version 1 config list; its fields are those of
// every type it takes (physical, nameserver, route).
type v1Entry struct {
	Type       string     `yaml:"type"`
	Name       string     `yaml:"name"`
	MACAddress string     `yaml:"mac_address"`
	MTU        uint32     `yaml:"mtu"`
	Subnets    []v1Subnet `yaml:"subnets"`
	Address    stringList `yaml:"address"`
	Search     stringList `yaml:"search"`
	Route      v1Route    `yaml:",inline"`
}

type v1Subnet struct {
	Type           string     `yaml:"type"`
	Address        string     `yaml:"address"`
	Netmask        string     `yaml:"netmask"`
	Prefix         string     `yaml:"prefix"`
	Gateway        string     `yaml:"gateway"`
	Routes         []v1Route  `yaml:"routes"`
	DNSNameservers stringList `yaml:"dns_nameservers"`
	DNSSearch      stringList `yaml:"dns_search"`
}

type v1Route struct {
	Destination string `yaml:"destination"`
	Network     string `yaml:"network"`
	Netmask     string `yaml:"netmask"`
	Prefix      string `yaml:"prefix"`
	Gateway     string `yaml:"gateway"`
	Metric      uint32 `yaml:"metric"`
}

func (bld *builder) v1(doc map[string]yaml.Node) error {
	var entries []v1Entry

	if n, ok := doc["config"]; ok {
		if err := n.Decode(&entries); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}

	for i, e := range entries {
		where := cmp.Or(e.Name, fmt.Sprintf("config[%d]", i))

		var err error

		switch e.Type {
		case "physical":
			err = bld.v1Physical(e)
		case "nameserver":
			err = bld.nameservers(e.Address, e.Search)
		case "route":
			err = bld.v1Route("", e.Route)
		default:
			// bonds, VLANs and bridges would carry the addresses
			// meant for the node: configuring the rest without them
			// would leave it half-addressed.
			err = fmt.Errorf("type %q is not supported (only physical, nameserver and route are)", e.Type)
		}

		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}

	return nil
}

func (bld *builder) v1Physical(e v1Entry) error {
	// name is what cloud-init would rename the link to; talosbox renames
	// no link, so the MAC address finds the kernel's name for it.
	name := e.Name
	if e.MACAddress != "" {
		var err error
		if name, err = bld.byMAC(e.MACAddress); err != nil {
			return err
		}
	}

	if name == "" {
		return errors.New("physical entry has neither name nor mac_address")
	}

	if err := bld.link(name, e.MTU); err != nil {
		return err
	}

	for _, s := range e.Subnets {
		if err := bld.v1Subnet(name, s); err != nil {
			return err
		}
	}

	return nil
}

func (bld *builder) v1Subnet(link string, s v1Subnet) error {
	switch s.Type {
	case "dhcp", "dhcp4":
		bld.dhcp4(link)
	case "dhcp6", "ipv6_dhcpv6-stateful", "ipv6_dhcpv6-stateless", "ipv6_slaac", "manual":
		// No DHCPv6 client here; the kernel does SLAAC on its own; manual
		// only brings the link up, which its link spec does.
	case "static", "static6":
		if s.Address == "" {
			return fmt.Errorf("%s subnet has no address", s.Type)
		}

		p, err := parsePrefix(s.Address, cmp.Or(s.Netmask, s.Prefix))
		if err != nil {
			return fmt.Errorf("address %q: %w", s.Address, err)
		}

		bld.address(link, p)

		if s.Gateway != "" {
			gw, err := netip.ParseAddr(s.Gateway)
			if err != nil {
				return fmt.Errorf("gateway %q: %w", s.Gateway, err)
			}

			rt, err := newRoute(link, netip.Prefix{}, gw, 0)
			if err != nil {
				return err
			}

			if err := bld.route(rt); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("subnet type %q is not supported", s.Type)
	}

	for _, r := range s.Routes {
		if err := bld.v1Route(link, r); err != nil {
			return err
		}
	}

	return bld.nameservers(s.DNSNameservers, s.DNSSearch)
}

// v1Route adds a subnet's route out of link, or a global route (link "").
func (bld *builder) v1Route(link string, r v1Route) error {
	to := cmp.Or(r.Destination, r.Network)
	if to == "" {
		return errors.New("route has neither destination nor network")
	}

	dst, err := parsePrefix(to, cmp.Or(r.Netmask, r.Prefix))
	if err != nil {
		return fmt.Errorf("route to %q: %w", to, err)
	}

	var gw netip.Addr
	if r.Gateway != "" {
		if gw, err = netip.ParseAddr(r.Gateway); err != nil {
			return fmt.Errorf("route to %q: gateway %q: %w", to, r.Gateway, err)
		}
	}

	rt, err := newRoute(link, dst, gw, r.Metric)
	if err != nil {
		return fmt.Errorf("route to %q: %w", to, err)
	}

	return bld.route(rt)
}
