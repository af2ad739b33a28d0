package configs

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// kubeSpanMinMTU is the smallest MTU of the KubeSpan WireGuard link.
const kubeSpanMinMTU = 1280

func (v *validator) network(n *NetworkConfig) {
	const p = "machine.network"

	if n.Hostname != "" {
		if why := dnsNameProblem(n.Hostname); why != "" {
			v.errorf(p+".hostname", "invalid hostname %q: %s", n.Hostname, why)
		}
	}

	for i, ns := range n.Nameservers {
		v.check(indexPath(p+".nameservers", i), checkIP("nameserver address", ns))
	}

	for i, d := range n.SearchDomains {
		if why := dnsNameProblem(d); why != "" {
			v.errorf(indexPath(p+".searchDomains", i), "invalid search domain %q: %s", d, why)
		}
	}

	for i, h := range n.ExtraHostEntries {
		hp := indexPath(p+".extraHostEntries", i)
		v.check(hp+".ip", checkIP("host entry address", h.IP))

		if len(h.Aliases) == 0 {
			v.errorf(hp+".aliases", "at least one alias is required")
		}

		for j, a := range h.Aliases {
			if why := dnsNameProblem(a); why != "" {
				v.errorf(indexPath(hp+".aliases", j), "invalid host alias %q: %s", a, why)
			}
		}
	}

	if ks := n.KubeSpan; ks != nil && ks.Enabled {
		v.warnf(p+".kubespan.enabled", "has no effect: talosbox does not implement KubeSpan yet (a WireGuard link of machine.network.interfaces[].wireguard does what it would)")
	}

	if ks := n.KubeSpan; ks != nil && ks.Enabled && ks.MTU != 0 && ks.MTU < kubeSpanMinMTU {
		v.errorf(p+".kubespan.mtu", "kubespan link MTU must be at least %d (the IPv6 minimum), got %d", kubeSpanMinMTU, ks.MTU)
	}

	if ks := n.KubeSpan; ks != nil && ks.Filters != nil {
		for i, s := range ks.Filters.Endpoints {
			v.check(indexPath(p+".kubespan.filters.endpoints", i), checkSubnetFilter(s))
		}

		for i, s := range ks.Filters.ExcludeAdvertisedNetworks {
			v.check(indexPath(p+".kubespan.filters.excludeAdvertisedNetworks", i), checkCIDR(s))
		}
	}

	for i := range n.Interfaces {
		v.device(indexPath(p+".interfaces", i), &n.Interfaces[i])
	}

	v.links(n.Interfaces)
}

func (v *validator) device(p string, d *Device) {
	switch {
	case d.Interface == "" && d.DeviceSelector == nil:
		v.errorf(p, "either interface or deviceSelector is required")
	case d.Interface != "" && d.DeviceSelector != nil:
		v.errorf(p, "interface and deviceSelector are mutually exclusive")
	}

	if d.DeviceSelector != nil {
		v.deviceSelector(p+".deviceSelector", d.DeviceSelector)
	}

	v.addressing(p, "interface", d.Addresses, d.CIDR, d.Routes, d.MTU, d.VIP)

	var kinds []string

	if d.Bond != nil {
		kinds = append(kinds, "bond")
		v.bond(p+".bond", d.Bond)
	}

	if d.Bridge != nil {
		kinds = append(kinds, "bridge")

		if d.Bridge.STP != nil && d.Bridge.STP.Enabled {
			v.warnf(p+".bridge.stp.enabled", "talosbox does not turn on the spanning tree protocol on bridges yet: the bridge forwards without it")
		}
	}

	if d.Dummy {
		kinds = append(kinds, "dummy")
	}

	if d.WireGuard != nil {
		kinds = append(kinds, "wireguard")
		v.wireguard(p+".wireguard", d.WireGuard)
	}

	if len(kinds) > 1 {
		v.errorf(p, "a link can only be one of bond, bridge, dummy or wireguard (found %s)", strings.Join(kinds, ", "))
	}

	if d.DHCPOptions != nil && !d.DHCP {
		v.warnf(p+".dhcpOptions", "dhcpOptions have no effect without dhcp: true")
	}

	v.dhcpv6(p, d.DHCP, d.DHCPOptions)

	seen := map[uint16]bool{}

	for i, vl := range d.VLANs {
		vp := indexPath(p+".vlans", i)

		switch {
		case vl.ID < 1 || vl.ID > 4094:
			v.errorf(vp+".vlanId", "invalid VLAN ID %d: must be between 1 and 4094", vl.ID)
		case seen[vl.ID]:
			v.errorf(vp+".vlanId", "VLAN ID %d is declared twice on this link", vl.ID)
		}

		seen[vl.ID] = true

		v.addressing(vp, "vlan", vl.Addresses, vl.CIDR, vl.Routes, vl.MTU, vl.VIP)
		v.dhcpv6(vp, vl.DHCP, vl.DHCPOptions)
	}
}

// dhcpv6 warns for dhcpOptions.ipv6: Talos runs a DHCPv6 client then, and
// talosbox has none yet. Only a warning, unlike a DHCPv6Config document:
// the option rides along with DHCPv4 on the same link (Talos's stability
// configs carry it), and the link still gets its IPv4 lease and the
// addresses router advertisements give.
func (v *validator) dhcpv6(p string, dhcp bool, o *DHCPOptions) {
	if dhcp && o != nil && o.IPv6 != nil && *o.IPv6 {
		v.warnf(p+".dhcpOptions.ipv6", "talosbox has no DHCPv6 client yet: the link gets no DHCPv6 lease, only a DHCPv4 one and the addresses router advertisements give")
	}
}

func (v *validator) deviceSelector(p string, s *DeviceSelector) {
	if *s == (DeviceSelector{}) {
		v.errorf(p, "deviceSelector must match on at least one property")
	}

	// Selectors may use glob patterns, so only plain addresses are parsed.
	for _, f := range []struct{ field, mac string }{{"hardwareAddr", s.HardwareAddr}, {"permanentAddr", s.PermanentAddr}} {
		if f.mac != "" && !strings.ContainsAny(f.mac, "*?[") {
			if _, err := net.ParseMAC(f.mac); err != nil {
				v.errorf(p+"."+f.field, "invalid MAC address %q", f.mac)
			}
		}
	}
}

// addressing checks what a link and a VLAN (kind) have in common.
func (v *validator) addressing(p, kind string, addrs []string, cidr string, routes []Route, mtu uint32, vip *VIPConfig) {
	for i, a := range addrs {
		v.check(indexPath(p+".addresses", i), checkAddressPrefix(a))
	}

	if cidr != "" {
		v.check(p+".cidr", checkAddressPrefix(cidr))

		// Talos refuses both: cidr is the single address of the releases
		// before addresses existed.
		if len(addrs) > 0 {
			v.errorf(p+".cidr", "%s can't have both .cidr and .addresses set: list %s in addresses instead", kind, cidr)
		}
	}

	for i, r := range routes {
		v.route(indexPath(p+".routes", i), r)
	}

	if mtu != 0 && (mtu < 68 || mtu > 65535) {
		v.errorf(p+".mtu", "invalid MTU %d: must be between 68 and 65535", mtu)
	}

	if vip != nil {
		if !v.controlPlane() {
			v.errorf(p+".vip", "virtual (shared) IP is not allowed on non-controlplane nodes")
		}

		v.check(p+".vip.ip", checkIP("VIP address", vip.IP))
	}
}

func (v *validator) route(p string, r Route) {
	var network netip.Prefix

	if r.Network != "" {
		var err error
		if network, err = netip.ParsePrefix(r.Network); err != nil {
			v.errorf(p+".network", "invalid CIDR %q", r.Network)
		}
	}

	if r.Gateway != "" {
		gw, err := netip.ParseAddr(r.Gateway)

		switch {
		case err != nil:
			v.errorf(p+".gateway", "invalid gateway address %q", r.Gateway)
		case network.IsValid() && gw.Is4() != network.Addr().Is4():
			v.errorf(p+".gateway", "gateway %s and network %s are of different address families", r.Gateway, r.Network)
		}
	}

	if r.Source != "" {
		v.check(p+".source", checkIP("source address", r.Source))
	}

	if r.Network == "" && r.Gateway == "" {
		v.errorf(p, "route needs a network, a gateway or both")
	}

	if r.MTU != 0 && (r.MTU < 68 || r.MTU > 65535) {
		v.errorf(p+".mtu", "invalid MTU %d: must be between 68 and 65535", r.MTU)
	}
}

func (v *validator) oneOf(p, what, value string, allowed []string) {
	if value != "" && !slices.Contains(allowed, value) {
		v.errorf(p, "unsupported %s %q (expected one of %s)", what, value, strings.Join(allowed, ", "))
	}
}

func (v *validator) wireguard(p string, wg *WireGuardConfig) {
	if wg.PrivateKey == "" {
		v.errorf(p+".privateKey", "wireguard private key is required")
	} else {
		v.check(p+".privateKey", checkBase64Key("wireguard private key", wg.PrivateKey, 32))
	}

	v.check(p+".listenPort", checkPort("listen port", wg.ListenPort))

	if wg.FirewallMark < 0 {
		v.errorf(p+".firewallMark", "firewall mark must not be negative")
	}

	for i, peer := range wg.Peers {
		pp := indexPath(p+".peers", i)

		v.check(pp+".publicKey", checkBase64Key("wireguard public key", peer.PublicKey, 32))

		if peer.Endpoint != "" {
			v.check(pp+".endpoint", checkHostPort("wireguard peer endpoint", peer.Endpoint))
		}

		if peer.PersistentKeepaliveInterval < 0 {
			v.errorf(pp+".persistentKeepaliveInterval", "must not be negative")
		}

		for j, a := range peer.AllowedIPs {
			v.check(indexPath(pp+".allowedIPs", j), checkCIDR(a))
		}
	}
}

// links checks relations between entries: duplicates, and links that two
// bonds or bridges both claim.
func (v *validator) links(devs []Device) {
	const p = "machine.network.interfaces"

	byName := map[string][]int{}
	bySelector := map[string][]int{}
	bridges := map[string]bool{}

	for i, d := range devs {
		if d.Interface != "" {
			byName[d.Interface] = append(byName[d.Interface], i)
		}

		if d.DeviceSelector != nil && *d.DeviceSelector != (DeviceSelector{}) {
			key := selectorKey(d.DeviceSelector)
			bySelector[key] = append(bySelector[key], i)
		}

		if d.Bridge != nil {
			bridges[d.Interface] = true
		}
	}

	v.duplicateLinks(devs, byName, func(name string) string { return fmt.Sprintf("interface %q", name) })
	// Equal selectors (compared field by field) match the same links, so
	// they are held to the same rules as a repeated interface name.
	v.duplicateLinks(devs, bySelector, func(key string) string { return key })

	// members maps a link to the bond or bridge that claimed it first.
	members := map[string]string{}
	claim := func(path, member, owner string) {
		if member == owner {
			v.errorf(path, "link %q cannot be a member of itself", member)

			return
		}

		if _, taken := members[member]; taken {
			v.errorf(path, "interface %q is declared as part of two separate links", member)

			return
		}

		members[member] = owner
	}

	for i, d := range devs {
		dp := indexPath(p, i)

		if d.Bond != nil {
			for j, m := range d.Bond.Interfaces {
				claim(indexPath(dp+".bond.interfaces", j), m, d.Interface)
			}
		}

		if d.Bridge != nil {
			for j, m := range d.Bridge.Interfaces {
				claim(indexPath(dp+".bridge.interfaces", j), m, d.Interface)
			}
		}

		if d.BridgePort != nil {
			if !bridges[d.BridgePort.Master] {
				v.errorf(dp+".bridgePort.master", "bridge %q is not declared", d.BridgePort.Master)
			}

			claim(dp+".bridgePort", d.Interface, d.BridgePort.Master)
		}
	}

	// A bond or bridge member is driven by its master; addresses of its own
	// would be silently lost.
	for _, name := range sortedKeys(members) {
		for _, i := range byName[name] {
			d := devs[i]
			if len(d.Addresses) > 0 || d.CIDR != "" || d.DHCP || len(d.VLANs) > 0 || d.VIP != nil {
				v.errorf(indexPath(p, i), "interface %q is a member of %q and cannot have addressing of its own", name, members[name])
			}
		}
	}
}

// duplicateLinks allows the same interface in several entries (the Talos
// guides do so to add addresses), but not entries that disagree.
func (v *validator) duplicateLinks(devs []Device, byName map[string][]int, what func(string) string) {
	for _, name := range sortedKeys(byName) {
		idx, link := byName[name], what(name)
		if len(idx) < 2 {
			continue
		}

		var kindOwner, mtuOwner *Device

		for _, i := range idx {
			d := &devs[i]
			dp := indexPath("machine.network.interfaces", i)

			if d.Bond != nil || d.Bridge != nil || d.WireGuard != nil || d.Dummy {
				if kindOwner != nil {
					v.errorf(dp, "%s is declared more than once with link settings (bond, bridge, dummy or wireguard)", link)
				}

				kindOwner = d
			}

			if d.MTU != 0 {
				if mtuOwner != nil && mtuOwner.MTU != d.MTU {
					v.errorf(dp+".mtu", "%s is declared more than once with different MTUs (%d and %d)", link, mtuOwner.MTU, d.MTU)
				}

				mtuOwner = d
			}
		}

		v.duplicateVLANs(link, devs, idx)
	}
}

func (v *validator) duplicateVLANs(link string, devs []Device, idx []int) {
	seen := map[uint16]bool{}

	for _, i := range idx {
		local := map[uint16]bool{}

		for j, vl := range devs[i].VLANs {
			if seen[vl.ID] && !local[vl.ID] {
				v.errorf(fmt.Sprintf("machine.network.interfaces[%d].vlans[%d].vlanId", i, j),
					"VLAN ID %d is declared twice on %s", vl.ID, link)
			}

			local[vl.ID] = true
		}

		for id := range local {
			seen[id] = true
		}
	}
}

// selectorKey names a device selector by its set fields, in a fixed order,
// so equal selectors get equal keys and messages can show them.
func selectorKey(s *DeviceSelector) string {
	var parts []string

	for _, f := range []struct{ name, value string }{
		{"busPath", s.BusPath}, {"hardwareAddr", s.HardwareAddr}, {"permanentAddr", s.PermanentAddr},
		{"pciID", s.PCIID}, {"driver", s.Driver},
	} {
		if f.value != "" {
			parts = append(parts, fmt.Sprintf("%s: %q", f.name, f.value))
		}
	}

	if s.Physical != nil {
		parts = append(parts, fmt.Sprintf("physical: %t", *s.Physical))
	}

	return "deviceSelector {" + strings.Join(parts, ", ") + "}"
}
