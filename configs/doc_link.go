package configs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// LinkConfig is Talos's LinkConfig: the settings of one existing link
// (a physical NIC, or a link made elsewhere), named by its kernel name.
// What v1alpha1 can say lands in machine.network.interfaces (see
// foldLink); a link that is down, its multicast flag and routes in a
// table other than main are read by networkd from the document.
type LinkConfig struct {
	Name      string        `yaml:"name"`
	Up        *bool         `yaml:"up,omitempty"`
	MTU       uint32        `yaml:"mtu,omitempty"`
	Addresses []LinkAddress `yaml:"addresses,omitempty"`
	Routes    []LinkRoute   `yaml:"routes,omitempty"`
	Multicast *bool         `yaml:"multicast,omitempty"`
}

// LinkAddress is an address of a link document.
type LinkAddress struct {
	// Address is an IP address with its prefix length.
	Address string `yaml:"address"`
	// RoutePriority is the metric of the address's prefix route.
	RoutePriority *uint32 `yaml:"routePriority,omitempty"`
}

// LinkRoute is a route of a link document. No destination is the default
// route.
type LinkRoute struct {
	Destination string `yaml:"destination,omitempty"`
	Gateway     string `yaml:"gateway,omitempty"`
	Source      string `yaml:"source,omitempty"`
	Metric      uint32 `yaml:"metric,omitempty"`
	MTU         uint32 `yaml:"mtu,omitempty"`
	// Table is a routing table: main (the default), local, default, or
	// a number from 1 to 252.
	Table string `yaml:"table,omitempty"`
}

// LinkSettings are the settings every link document has (Talos's
// CommonLinkConfig): LinkConfig, BondConfig, BridgeConfig,
// DummyLinkConfig, VLANConfig, WireguardConfig.
type LinkSettings struct {
	Up        *bool
	MTU       uint32
	Addresses []LinkAddress
	Routes    []LinkRoute
	Multicast *bool
}

// LinkDocument is a document that configures one link, named by its
// DocumentName: networkd reads from it what v1alpha1 cannot say.
type LinkDocument interface {
	NamedDocument
	// LinkSettings returns the settings every link document has.
	LinkSettings() LinkSettings
}

// Kind implements Document.
func (*LinkConfig) Kind() string { return "LinkConfig" }

// DocumentName implements NamedDocument.
func (l *LinkConfig) DocumentName() string { return l.Name }

// LinkSettings implements LinkDocument.
func (l *LinkConfig) LinkSettings() LinkSettings {
	return LinkSettings{Up: l.Up, MTU: l.MTU, Addresses: l.Addresses, Routes: l.Routes, Multicast: l.Multicast}
}

func (l *LinkConfig) check(v *validator, path string) {
	v.linkName(path, l.Name)
	v.linkSettings(path, l.LinkSettings())
	v.linkClaims(path, l)
}

func (l *LinkConfig) fold(f *folding) {
	if l.Name == "" {
		return // refused by check: there is no link to fold into
	}

	f.foldLink(f.linkTarget(l.Name), l.LinkSettings())
}

// MainTable reports whether the route goes to the main routing table,
// where machine.network's routes go.
func (r LinkRoute) MainTable() bool {
	return r.Table == "" || strings.EqualFold(r.Table, "main")
}

// The routing tables Talos names (nethelpers.RoutingTable); the others
// are numbers from 1 to 252.
var routingTables = map[string]uint32{"unspec": 0, "default": 253, "main": 254, "local": 255}

// ParseRoutingTable reads a route's table as Talos does: a name (main,
// local, default, unspec) or a number from 1 to 252.
func ParseRoutingTable(s string) (uint32, error) {
	if t, ok := routingTables[strings.ToLower(s)]; ok {
		return t, nil
	}

	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < 1 || n > 252 {
		return 0, fmt.Errorf("invalid routing table %q: want main, local, default or a number from 1 to 252", s)
	}

	return uint32(n), nil
}

// linkName checks a link document's name: the kernel's name of the link.
func (v *validator) linkName(path, name string) {
	switch {
	case name == "":
		v.errorf(path+".name", "name must be specified: the link's name (eth0, enp0s3)")
	case len(name) > 15 || strings.ContainsAny(name, "/ \t\n:"):
		v.errorf(path+".name", "invalid link name %q: a link name has at most 15 characters, without '/', ':' or white space", name)
	}
}

// linkSettings checks what every link document has, as Talos's
// CommonLinkConfig.Validate does. What is folded into machine.network
// (addresses, routes of the main table, the MTU) is also checked there
// by the v1alpha1 rules, which name this document's lines: only what
// they do not say is checked here.
func (v *validator) linkSettings(path string, s LinkSettings) {
	for i, a := range s.Addresses {
		p := indexPath(path+".addresses", i)

		switch pfx, err := ParseAddressPrefix(a.Address); {
		case a.Address == "":
			v.errorf(p+".address", "address must be specified: an IP address with its prefix length (192.168.1.10/24)")
		case err != nil:
			// The v1alpha1 rule on machine.network's addresses says it.
		case !strings.Contains(a.Address, "/"):
			v.errorf(p+".address", "address %q has no prefix length: write it as %s/%d (or the subnet's length)", a.Address, a.Address, pfx.Bits())
		case pfx.Addr().IsUnspecified():
			v.errorf(p+".address", "address %q is unspecified: a link address must be a host's", a.Address)
		}

		if a.RoutePriority != nil {
			v.errorf(p+".routePriority", "talosbox does not implement an address's routePriority yet (the kernel gives the prefix route its default metric): remove it, "+
				"or add the prefix route with its metric in routes")
		}
	}

	for i, r := range s.Routes {
		p := indexPath(path+".routes", i)

		if r.Destination != "" {
			if d, err := netip.ParsePrefix(r.Destination); err == nil && d.Addr().IsUnspecified() {
				v.errorf(p+".destination", "destination %s is the default route: leave destination out for a default route", r.Destination)
			}
		}

		for _, a := range []struct{ field, value string }{{"gateway", r.Gateway}, {"source", r.Source}} {
			if ip, err := netip.ParseAddr(a.value); err == nil && ip.IsUnspecified() {
				v.errorf(p+"."+a.field, "%s %s is unspecified: leave it out instead", a.field, a.value)
			}
		}

		if r.MainTable() {
			continue // folded into machine.network, checked there
		}

		if _, err := ParseRoutingTable(r.Table); err != nil {
			v.errorf(p+".table", "%v", err)
		}

		// Routes of other tables are read by networkd from the document,
		// so the v1alpha1 route rules are applied here.
		v.routeOf(p, "destination", Route{Network: r.Destination, Gateway: r.Gateway, Source: r.Source, MTU: r.MTU})
	}
}

// routeOf is the v1alpha1 route rules for a route written with its
// destination under another name (a link document's destination).
func (v *validator) routeOf(p, destination string, r Route) {
	sub := &validator{cfg: v.cfg}
	sub.route(p, r)

	for _, e := range sub.errs {
		if ve, ok := e.(*ValidationError); ok && ve.Path == p+".network" {
			ve.Path = p + "." + destination
		}

		v.errs = append(v.errs, e)
	}
}

// linkClaims refuses a second link document for a link an earlier one
// configures: Talos refuses them too ("conflicting link
// configurations"), whatever their kinds.
func (v *validator) linkClaims(path string, self LinkDocument) {
	name := self.DocumentName()
	if name == "" {
		return
	}

	for _, d := range v.cfg.Documents {
		if d == Document(self) {
			return
		}

		if other, ok := d.(LinkDocument); ok && other.DocumentName() == name {
			v.errorf(path, "link %q is already configured by %s: a link is configured by one document (Talos refuses both)",
				name, documentID(other.Kind(), name, true))

			return
		}
	}
}

// linkTarget is where a link's settings land in the effective
// machine.network: an interfaces entry, or one of its VLANs.
type linkTarget struct {
	dev  int // index in machine.network.interfaces
	vlan int // index in its vlans; -1 for the entry itself
}

// linkTarget finds (or adds) where the link named name lands: the VLAN a
// VLANConfig names so, a VLAN the v1alpha1 document declares under that
// name (<parent>.<id>), or the interfaces entry of that name. Which one
// depends on what was written, never on what other documents folded
// before, so documents fold the same in any order.
func (f *folding) linkTarget(name string) linkTarget {
	for _, vd := range DocumentsOf[*VLANConfig](f.cfg) {
		if vd.Name == name && vd.declares() {
			return f.vlanTarget(vd.Parent, vd.VLANID)
		}
	}

	if w := f.written.Machine; w != nil && w.Network != nil {
		for _, d := range w.Network.Interfaces {
			if d.Interface == "" || d.DeviceSelector != nil || d.Ignore {
				continue
			}

			for _, vl := range d.VLANs {
				if fmt.Sprintf("%s.%d", d.Interface, vl.ID) == name {
					return f.vlanTarget(d.Interface, vl.ID)
				}
			}
		}
	}

	return linkTarget{dev: f.deviceTarget(name), vlan: -1}
}

// deviceTarget is the index of the interfaces entry of link name, added
// when there is none. An entry that ignores the link is not one: Talos
// configures the link from the document all the same, talosbox refuses.
func (f *folding) deviceTarget(name string) int {
	n := f.network()

	for i, d := range n.Interfaces {
		if d.Interface == name && d.DeviceSelector == nil && !d.Ignore {
			return i
		}
	}

	for i, d := range n.Interfaces {
		if d.Interface == name && d.Ignore {
			f.problem("", "link %q is ignored by the v1alpha1 document (machine.network.interfaces[%d].ignore): "+
				"a document cannot configure it too; remove one of them", name, i)
		}
	}

	n.Interfaces = append(n.Interfaces, Device{Interface: name})
	i := len(n.Interfaces) - 1
	f.alias(indexPath("machine.network.interfaces", i), "")

	return i
}

// vlanTarget is the VLAN id of the entry of link parent, added when
// missing.
func (f *folding) vlanTarget(parent string, id uint16) linkTarget {
	dev := f.deviceTarget(parent)
	d := &f.network().Interfaces[dev]

	for j, vl := range d.VLANs {
		if vl.ID == id {
			return linkTarget{dev: dev, vlan: j}
		}
	}

	d.VLANs = append(d.VLANs, VLAN{ID: id})
	j := len(d.VLANs) - 1
	f.alias(indexPath(indexPath("machine.network.interfaces", dev)+".vlans", j), "")

	return linkTarget{dev: dev, vlan: j}
}

// linkFields are the fields an interfaces entry and a VLAN share.
type linkFields struct {
	path   string
	addrs  *[]string
	routes *[]Route
	mtu    *uint32
	dhcp   *bool
	opts   **DHCPOptions
}

func (f *folding) fields(t linkTarget) linkFields {
	d := &f.network().Interfaces[t.dev]
	p := indexPath("machine.network.interfaces", t.dev)

	if t.vlan < 0 {
		return linkFields{path: p, addrs: &d.Addresses, routes: &d.Routes, mtu: &d.MTU, dhcp: &d.DHCP, opts: &d.DHCPOptions}
	}

	vl := &d.VLANs[t.vlan]

	return linkFields{path: indexPath(p+".vlans", t.vlan), addrs: &vl.Addresses, routes: &vl.Routes, mtu: &vl.MTU, dhcp: &vl.DHCP, opts: &vl.DHCPOptions}
}

// foldLink writes a link document's settings into its target, as Talos
// merges a link document with machine.network's entry for the same link:
// the document's MTU wins, addresses and routes are added to the entry's.
// Routes of other tables than main stay in the document (networkd reads
// them there), and so do up and multicast.
func (f *folding) foldLink(t linkTarget, s LinkSettings) {
	lf := f.fields(t)

	if s.MTU != 0 {
		*lf.mtu = s.MTU
		f.alias(lf.path+".mtu", "mtu")
	}

	for j, a := range s.Addresses {
		if a.Address == "" {
			continue // refused by check, in the document's words
		}

		*lf.addrs = append(*lf.addrs, a.Address)
		f.alias(indexPath(lf.path+".addresses", len(*lf.addrs)-1), indexPath("addresses", j)+".address")
	}

	for j, r := range s.Routes {
		if !r.MainTable() {
			continue
		}

		*lf.routes = append(*lf.routes, Route{Network: r.Destination, Gateway: r.Gateway, Source: r.Source, Metric: r.Metric, MTU: r.MTU})
		rp := indexPath(lf.path+".routes", len(*lf.routes)-1)
		f.alias(rp, indexPath("routes", j))
		f.alias(rp+".network", indexPath("routes", j)+".destination")
	}
}

// linkKindConflict reports a link document that makes a link of a kind
// (bond, bridge, dummy, wireguard) the v1alpha1 document already makes a
// link of some kind: Talos would mix both, talosbox refuses (and folds
// nothing, so the mix is not reported again in v1alpha1's words).
func (f *folding) linkKindConflict(name, kind string) bool {
	w := f.written.Machine
	if w == nil || w.Network == nil {
		return false
	}

	for i, d := range w.Network.Interfaces {
		if d.Interface != name || d.DeviceSelector != nil {
			continue
		}

		for _, k := range []struct {
			name string
			set  bool
		}{{"bond", d.Bond != nil}, {"bridge", d.Bridge != nil}, {"dummy", d.Dummy}, {"wireguard", d.WireGuard != nil}} {
			if k.set {
				f.problem("", "link %q is already a %s link in the v1alpha1 document (machine.network.interfaces[%d].%s): "+
					"a %s link is declared in one place; remove one of them", name, k.name, i, k.name, kind)

				return true
			}
		}
	}

	return false
}
