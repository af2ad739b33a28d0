package nocloud

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// MetaData is what meta-data says of the instance.
type MetaData struct {
	InstanceID string
	Hostname   string // local-hostname, else hostname; "" when neither
}

// ParseMetaData reads meta-data (YAML; cloud-init also accepts JSON, which is YAML).
func ParseMetaData(b []byte) (MetaData, error) {
	var raw struct {
		InstanceID    string `yaml:"instance-id"`
		LocalHostname string `yaml:"local-hostname"`
		Hostname      string `yaml:"hostname"`
	}

	if err := yaml.Unmarshal(b, &raw); err != nil {
		return MetaData{}, fmt.Errorf("meta-data: %w", err)
	}

	// cloud-init prefers local-hostname: hostname is the older key.
	return MetaData{
		InstanceID: strings.TrimSpace(raw.InstanceID),
		Hostname:   cmp.Or(strings.TrimSpace(raw.LocalHostname), strings.TrimSpace(raw.Hostname)),
	}, nil
}

// LinkResolver maps a MAC address (lower-case, colon-separated, as
// /sys/class/net/*/address shows it) to the kernel's link name; ok=false
// when no link has it.
type LinkResolver func(mac string) (name string, ok bool)

// ParseNetworkConfig reads network-config, version 1 or version 2 (netplan
// style, bare or wrapped in a top-level `network:` key as cloud-init allows),
// into specs at network.LayerPlatform. hostname (from meta-data) becomes a
// HostnameSpecSpec when not empty, split at the first dot into Hostname and
// Domainname. Links matched by MAC are named through resolve; a nil resolve
// knows no MAC address, and a MAC no link has is an error, since the links
// may not have appeared yet.
//
// An empty network-config, or cloud-init's `config: disabled`, configures
// no link. Search domains come only with nameservers: a platform resolver
// spec without servers would hide the lower layers' servers.
func ParseNetworkConfig(b []byte, hostname string, resolve LinkResolver) (*network.PlatformConfigSpec, error) {
	bld := &builder{resolve: resolve, links: map[string]bool{}, routes: map[string]int{}, addrs: map[string]bool{}, dhcp: map[string]bool{}}

	if err := bld.parse(b); err != nil {
		return nil, fmt.Errorf("network-config: %w", err)
	}

	if err := bld.hostname(hostname); err != nil {
		return nil, fmt.Errorf("network-config: %w", err)
	}

	if len(bld.dns) > 0 {
		bld.spec.Resolvers = []network.ResolverSpecSpec{{DNSServers: bld.dns, SearchDomains: bld.search, Layer: network.LayerPlatform}}
	}

	return &bld.spec, nil
}

// Route scopes, as internal/network names them.
const (
	scopeGlobal = "global"
	scopeLink   = "link"
)

// builder collects the specs of one network-config; its maps keep an entry
// from being added twice, since networkd keys specs by ID and a later
// duplicate would silently replace the earlier one.
type builder struct {
	spec    network.PlatformConfigSpec
	resolve LinkResolver
	links   map[string]bool
	addrs   map[string]bool
	dhcp    map[string]bool
	routes  map[string]int // ID → index in spec.Routes
	dns     []netip.Addr
	search  []string
}

func (bld *builder) parse(b []byte) error {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}

	// cloud-init's own config nests either version under network:.
	if n, ok := doc["network"]; ok {
		if _, ok := doc["version"]; !ok {
			doc = nil
			if err := n.Decode(&doc); err != nil {
				return fmt.Errorf("network: %w", err)
			}
		}
	}

	if len(doc) == 0 {
		return nil
	}

	if c, ok := doc["config"]; ok && c.Kind == yaml.ScalarNode && c.Value == "disabled" {
		return nil
	}

	vn, ok := doc["version"]
	if !ok {
		return errors.New("no version: want 1 or 2")
	}

	var version int
	if err := vn.Decode(&version); err != nil {
		return fmt.Errorf("version: %w", err)
	}

	switch version {
	case 1:
		return bld.v1(doc)
	case 2:
		return bld.v2(doc)
	}

	return fmt.Errorf("unknown version %d: want 1 or 2", version)
}

// byMAC names the link that has mac.
func (bld *builder) byMAC(mac string) (string, error) {
	hw, err := net.ParseMAC(strings.TrimSpace(mac))
	if err != nil {
		return "", fmt.Errorf("MAC address %q: %w", mac, err)
	}

	norm := hw.String() // lower-case and colon-separated, as sysfs has it
	if bld.resolve != nil {
		if name, ok := bld.resolve(norm); ok && name != "" {
			return name, nil
		}
	}

	return "", fmt.Errorf("no link has MAC address %s", norm)
}

func (bld *builder) link(name string, mtu uint32) error {
	if bld.links[name] {
		return fmt.Errorf("link %s is configured twice", name)
	}

	bld.links[name] = true
	bld.spec.Links = append(bld.spec.Links, network.LinkSpecSpec{Name: name, Up: true, MTU: mtu, Layer: network.LayerPlatform})

	return nil
}

func (bld *builder) address(link string, p netip.Prefix) {
	if id := network.AddressID(link, p); !bld.addrs[id] {
		bld.addrs[id] = true
		bld.spec.Addresses = append(bld.spec.Addresses, network.AddressSpecSpec{
			Address: p, LinkName: link, Family: network.FamilyOf(p.Addr()), Layer: network.LayerPlatform,
		})
	}
}

func (bld *builder) dhcp4(link string) {
	if !bld.dhcp[link] {
		bld.dhcp[link] = true
		bld.spec.Operators = append(bld.spec.Operators, network.OperatorSpecSpec{
			Operator: network.OperatorDHCP4, LinkName: link, RequireUp: true, RouteMetric: network.DefaultRouteMetric, Layer: network.LayerPlatform,
		})
	}
}

// route adds rt once; two different routes with one ID (the same gateway
// and metric out of two links) would leave networkd only one of them.
func (bld *builder) route(rt network.RouteSpecSpec) error {
	id := rt.ID()
	if i, ok := bld.routes[id]; ok {
		if reflect.DeepEqual(bld.spec.Routes[i], rt) {
			return nil
		}

		dst := "default"
		if rt.Destination.IsValid() {
			dst = rt.Destination.String()
		}

		return fmt.Errorf("route to %s via %s (metric %d) out of %q collides with the one out of %q: networkd keeps only one",
			dst, rt.Gateway, rt.Priority, rt.OutLinkName, bld.spec.Routes[i].OutLinkName)
	}

	bld.routes[id] = len(bld.spec.Routes)
	bld.spec.Routes = append(bld.spec.Routes, rt)

	return nil
}

// nameservers gathers every link's DNS settings into the one resolver spec
// networkd has.
func (bld *builder) nameservers(addrs, search []string) error {
	for _, s := range addrs {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("nameserver %q: %w", s, err)
		}

		if !slices.Contains(bld.dns, a) {
			bld.dns = append(bld.dns, a)
		}
	}

	for _, s := range search {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(bld.search, s) {
			bld.search = append(bld.search, s)
		}
	}

	return nil
}

func (bld *builder) hostname(h string) error {
	h = strings.TrimSuffix(strings.TrimSpace(h), ".") // an absolute FQDN's root dot names no domain
	if h == "" {
		return nil
	}

	host, domain, _ := strings.Cut(h, ".")
	if host == "" {
		return fmt.Errorf("hostname %q: no host label before the domain", h)
	}

	bld.spec.Hostnames = []network.HostnameSpecSpec{{Hostname: host, Domainname: domain, Layer: network.LayerPlatform}}

	return nil
}

// newRoute builds a static route out of link (none for a v1 global route);
// a zero gw makes it a direct (link-scope) route, a zero-length dst a
// default one.
func newRoute(link string, dst netip.Prefix, gw netip.Addr, metric uint32) (network.RouteSpecSpec, error) {
	rt := network.RouteSpecSpec{
		Gateway: gw, OutLinkName: link, Table: network.TableMain, Priority: cmp.Or(metric, network.DefaultRouteMetric),
		Scope: scopeGlobal, Type: network.RouteTypeUnicast, Protocol: network.ProtoStatic, Layer: network.LayerPlatform,
	}

	switch {
	case gw.IsValid():
		rt.Family = network.FamilyOf(gw)
		if dst.IsValid() && network.FamilyOf(dst.Addr()) != rt.Family {
			return rt, fmt.Errorf("gateway %s is not of the destination's address family", gw)
		}
	case link == "":
		return rt, errors.New("neither gateway nor link")
	case !dst.IsValid():
		return rt, errors.New("a default route needs a gateway")
	default:
		rt.Family, rt.Scope = network.FamilyOf(dst.Addr()), scopeLink
	}

	if dst.IsValid() && dst.Bits() > 0 {
		rt.Destination = dst.Masked()
	}

	return rt, nil
}

// parsePrefix reads an address either in CIDR form or plain with mask, a
// dotted netmask or a prefix length, as cloud-init's v1 takes both.
func parsePrefix(s, mask string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, err
		}

		if mask != "" {
			bits, err := maskBits(mask, p.Addr())
			if err != nil {
				return p, err
			}

			if bits != p.Bits() {
				return p, fmt.Errorf("netmask %q disagrees with the prefix length", mask)
			}
		}

		return p, nil
	}

	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}

	if a.Zone() != "" {
		return netip.Prefix{}, errors.New("an address with a zone cannot be assigned")
	}

	if mask == "" {
		return netip.Prefix{}, errors.New("no prefix length and no netmask")
	}

	bits, err := maskBits(mask, a)
	if err != nil {
		return netip.Prefix{}, err
	}

	return netip.PrefixFrom(a, bits), nil
}

func maskBits(mask string, a netip.Addr) (int, error) {
	mask = strings.TrimSpace(mask)
	if n, err := strconv.Atoi(strings.TrimPrefix(mask, "/")); err == nil {
		if n < 0 || n > a.BitLen() {
			return 0, fmt.Errorf("netmask %q: prefix length out of range for %s", mask, a)
		}

		return n, nil
	}

	m, err := netip.ParseAddr(mask)
	if err != nil {
		return 0, fmt.Errorf("netmask %q is neither a mask nor a prefix length: %w", mask, err)
	}

	if m.BitLen() != a.BitLen() {
		return 0, fmt.Errorf("netmask %q is not of the family of %s", mask, a)
	}

	ones, bits := net.IPMask(m.AsSlice()).Size()
	if bits == 0 {
		return 0, fmt.Errorf("netmask %q is not a mask: its one bits are not contiguous", mask)
	}

	return ones, nil
}

// stringList takes a YAML list or a single string, as cloud-init does for
// nameserver addresses and search domains.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = nil
		if n.ShortTag() != "!!null" {
			*l = stringList{n.Value}
		}

		return nil
	}

	return n.Decode((*[]string)(l))
}

// empty says a YAML value holds nothing, as `bonds: {}` or an absent key
// does.
func empty(n yaml.Node) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = *n.Alias
	}

	switch n.Kind {
	case 0:
		return true
	case yaml.MappingNode, yaml.SequenceNode:
		return len(n.Content) == 0
	case yaml.ScalarNode:
		return n.ShortTag() == "!!null"
	}

	return false
}
