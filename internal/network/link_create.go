package network

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// createLink creates a logical link and marks it as networkd's. Bridges
// (and VLANs, with the 8021q module) can be exercised on a host without
// the dummy, bonding and wireguard modules; the other kinds are covered in
// the QEMU guest.
func createLink(k *kernel, spec *network.LinkSpecSpec) (netlink.Link, error) {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = spec.Name

	if spec.MTU != 0 {
		attrs.MTU = int(spec.MTU)
	}

	if spec.HardwareAddr != "" {
		hw, err := net.ParseMAC(spec.HardwareAddr)
		if err != nil {
			return nil, fmt.Errorf("link %s: hardware address: %w", spec.Name, err)
		}

		attrs.HardwareAddr = hw
	}

	var link netlink.Link

	switch spec.Kind {
	case network.KindDummy:
		link = &netlink.Dummy{LinkAttrs: attrs}
	case network.KindVLAN:
		parent, err := k.h.LinkByName(spec.ParentName)
		if err != nil {
			return nil, fmt.Errorf("%w: parent %s of VLAN %s: %v", errLinkMissing, spec.ParentName, spec.Name, err)
		}

		attrs.ParentIndex = parent.Attrs().Index
		link = &netlink.Vlan{LinkAttrs: attrs, VlanId: int(spec.VLAN.ID), VlanProtocol: vlanProtocol(spec.VLAN.Protocol)}
	case network.KindBond:
		b := netlink.NewLinkBond(attrs)
		if err := bondSettings(b, &spec.Bond); err != nil {
			return nil, fmt.Errorf("bond %s: %w", spec.Name, err)
		}

		link = b
	case network.KindWireGuard:
		link = &netlink.Wireguard{LinkAttrs: attrs}
	case network.KindBridge:
		br := &netlink.Bridge{LinkAttrs: attrs}
		// Only when wanted: a kernel without VLAN filtering refuses the
		// attribute even when it says off.
		if spec.Bridge.VLANFiltering {
			br.VlanFiltering = &spec.Bridge.VLANFiltering
		}

		link = br
	default:
		return nil, fmt.Errorf("link %s: cannot create a link of kind %q", spec.Name, spec.Kind)
	}

	if err := k.h.LinkAdd(link); err != nil {
		return nil, fmt.Errorf("create %s link %s: %w", spec.Kind, spec.Name, err)
	}

	created, err := k.h.LinkByName(spec.Name)
	if err != nil {
		return nil, fmt.Errorf("look up created link %s: %w", spec.Name, err)
	}

	if err := k.h.LinkSetAlias(created, LinkAlias); err != nil {
		// Unmarked, it would never be cleaned up: undo the creation.
		k.h.LinkDel(created) //nolint:errcheck // already failing

		return nil, fmt.Errorf("mark link %s as networkd's: %w", spec.Name, err)
	}

	return created, nil
}

func bondSettings(b *netlink.Bond, s *network.BondSpec) error {
	if s.Mode != "" {
		if b.Mode = netlink.StringToBondMode(s.Mode); b.Mode == netlink.BOND_MODE_UNKNOWN {
			return fmt.Errorf("unknown bond mode %q", s.Mode)
		}
	}

	if s.HashPolicy != "" {
		if b.XmitHashPolicy = netlink.StringToBondXmitHashPolicy(s.HashPolicy); b.XmitHashPolicy == netlink.BOND_XMIT_HASH_POLICY_UNKNOWN {
			return fmt.Errorf("unknown bond hash policy %q", s.HashPolicy)
		}
	}

	if s.LACPRate != "" {
		if b.LacpRate = netlink.StringToBondLacpRate(s.LACPRate); b.LacpRate == netlink.BOND_LACP_RATE_UNKNOWN {
			return fmt.Errorf("unknown LACP rate %q", s.LACPRate)
		}
	}

	if s.MIIMon != 0 {
		b.Miimon = int(s.MIIMon)
	}

	if s.UpDelay != 0 {
		b.UpDelay = int(s.UpDelay)
	}

	if s.DownDelay != 0 {
		b.DownDelay = int(s.DownDelay)
	}

	if s.MinLinks != 0 {
		b.MinLinks = int(s.MinLinks)
	}

	return nil
}

func vlanProtocol(p string) netlink.VlanProtocol {
	if p == "802.1ad" {
		return netlink.VLAN_PROTOCOL_8021AD
	}

	return netlink.VLAN_PROTOCOL_8021Q
}

// updateLogical brings a logical link that exists in line with its spec
// where that is more than MTU and state: the bond, bridge and WireGuard
// settings.
func updateLogical(k *kernel, link netlink.Link, spec *network.LinkSpecSpec) error {
	switch spec.Kind {
	case network.KindBond:
		return updateBond(k, link, spec)
	case network.KindBridge:
		return updateBridge(k, link, spec)
	case network.KindWireGuard:
	default:
		return nil
	}

	cfg, err := wireGuardConfig(&spec.WireGuard)
	if err != nil {
		return fmt.Errorf("wireguard link %s: %w", spec.Name, err)
	}

	// wgctrl's generic netlink socket must be opened inside the namespace.
	return k.inNS(func() error {
		wg, err := wgctrl.New()
		if err != nil {
			return fmt.Errorf("open wireguard control: %w", err)
		}
		defer wg.Close() //nolint:errcheck

		dev, err := wg.Device(link.Attrs().Name)
		if err == nil && wireGuardMatches(dev, cfg) {
			return nil
		}

		if err := wg.ConfigureDevice(link.Attrs().Name, cfg); err != nil {
			return fmt.Errorf("configure wireguard link %s: %w", spec.Name, err)
		}

		return nil
	})
}

func wireGuardConfig(s *network.WireGuardSpec) (wgtypes.Config, error) {
	key, err := wgtypes.ParseKey(s.PrivateKey)
	if err != nil {
		return wgtypes.Config{}, fmt.Errorf("private key: %w", err)
	}

	cfg := wgtypes.Config{PrivateKey: &key, ReplacePeers: true}

	if s.ListenPort != 0 {
		cfg.ListenPort = &s.ListenPort
	}

	if s.FirewallMark != 0 {
		cfg.FirewallMark = &s.FirewallMark
	}

	for _, p := range s.Peers {
		pub, err := wgtypes.ParseKey(p.PublicKey)
		if err != nil {
			return cfg, fmt.Errorf("peer public key %q: %w", p.PublicKey, err)
		}

		pc := wgtypes.PeerConfig{PublicKey: pub, ReplaceAllowedIPs: true}

		if p.PresharedKey != "" {
			psk, err := wgtypes.ParseKey(p.PresharedKey)
			if err != nil {
				return cfg, fmt.Errorf("peer %s preshared key: %w", p.PublicKey, err)
			}

			pc.PresharedKey = &psk
		}

		if p.Endpoint != "" {
			if pc.Endpoint, err = net.ResolveUDPAddr("udp", p.Endpoint); err != nil {
				return cfg, fmt.Errorf("peer endpoint %q: %w", p.Endpoint, err)
			}
		}

		if p.PersistentKeepalive != 0 {
			ka := p.PersistentKeepalive
			pc.PersistentKeepaliveInterval = &ka
		}

		for _, a := range p.AllowedIPs {
			pc.AllowedIPs = append(pc.AllowedIPs, net.IPNet{IP: a.Addr().AsSlice(), Mask: net.CIDRMask(a.Bits(), a.Addr().BitLen())})
		}

		cfg.Peers = append(cfg.Peers, pc)
	}

	return cfg, nil
}

// wireGuardMatches avoids rewriting an unchanged device, which would
// reset its peers' handshakes on every reconcile.
func wireGuardMatches(dev *wgtypes.Device, cfg wgtypes.Config) bool {
	if dev.PrivateKey != *cfg.PrivateKey || len(dev.Peers) != len(cfg.Peers) {
		return false
	}

	if cfg.ListenPort != nil && dev.ListenPort != *cfg.ListenPort {
		return false
	}

	if cfg.FirewallMark != nil && dev.FirewallMark != *cfg.FirewallMark {
		return false
	}

	for i, p := range cfg.Peers {
		d := dev.Peers[i]
		if d.PublicKey != p.PublicKey || len(d.AllowedIPs) != len(p.AllowedIPs) {
			return false
		}

		if p.PersistentKeepaliveInterval != nil && d.PersistentKeepaliveInterval != *p.PersistentKeepaliveInterval {
			return false
		}

		if p.PresharedKey != nil && d.PresharedKey != *p.PresharedKey || p.PresharedKey == nil && d.PresharedKey != (wgtypes.Key{}) {
			return false
		}
	}

	return true
}

// updateBond brings an existing bond's settings in line with its spec. A
// bond networkd did not create is common: loading the bonding module with
// its default max_bonds=1 makes a bond0 in balance-rr mode without link
// monitoring, and a config change can alter a bond networkd made. The
// kernel takes a new mode or LACP rate only while the bond is down and has
// no members: those members are released here and join again right after,
// from their own specs, in the same reconcile pass (members rank after
// bonds); the bond is brought back up if it was up.
func updateBond(k *kernel, link netlink.Link, spec *network.LinkSpecSpec) error {
	cur, ok := link.(*netlink.Bond)
	if !ok {
		return fmt.Errorf("link %s is a %s link, not a bond", spec.Name, link.Type())
	}

	want := netlink.NewLinkBond(netlink.NewLinkAttrs())
	if err := bondSettings(want, &spec.Bond); err != nil {
		return fmt.Errorf("bond %s: %w", spec.Name, err)
	}

	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.Index = cur.Name, cur.Index
	upd := netlink.NewLinkBond(attrs)
	changed, needDown := false, false

	set := func(want, cur int, dst *int, down bool) {
		if want >= 0 && want != cur {
			*dst, changed = want, true
			needDown = needDown || down
		}
	}

	mode, hash, lacp := int(upd.Mode), int(upd.XmitHashPolicy), int(upd.LacpRate)
	set(int(want.Mode), int(cur.Mode), &mode, true)
	set(int(want.XmitHashPolicy), int(cur.XmitHashPolicy), &hash, false)
	set(int(want.LacpRate), int(cur.LacpRate), &lacp, true)
	upd.Mode, upd.XmitHashPolicy, upd.LacpRate = netlink.BondMode(mode), netlink.BondXmitHashPolicy(hash), netlink.BondLacpRate(lacp)
	set(want.Miimon, cur.Miimon, &upd.Miimon, false)

	// The kernel rounds the delays down to a multiple of miimon: compare
	// what it would keep, or every reconcile would write them again (and
	// the write's link event would trigger the next reconcile).
	miimon := cur.Miimon
	if want.Miimon >= 0 {
		miimon = want.Miimon
	}

	round := func(d int) int {
		if d > 0 && miimon > 0 {
			return d / miimon * miimon
		}

		return d
	}

	set(round(want.UpDelay), cur.UpDelay, &upd.UpDelay, false)
	set(round(want.DownDelay), cur.DownDelay, &upd.DownDelay, false)
	set(want.MinLinks, cur.MinLinks, &upd.MinLinks, false)

	if !changed {
		return nil
	}

	wasUp := cur.Flags&net.FlagUp != 0

	if needDown {
		links, err := retryDump(k.h.LinkList)
		if err != nil {
			return fmt.Errorf("list links: %w", err)
		}

		for _, l := range links {
			if l.Attrs().MasterIndex == cur.Index {
				if err := k.h.LinkSetNoMaster(l); err != nil {
					return fmt.Errorf("release %s from bond %s to change its mode: %w", l.Attrs().Name, spec.Name, err)
				}
			}
		}

		if wasUp {
			if err := k.h.LinkSetDown(cur); err != nil {
				return fmt.Errorf("set bond %s down to change its mode: %w", spec.Name, err)
			}
		}
	}

	if err := k.h.LinkModify(upd); err != nil {
		return fmt.Errorf("update bond %s settings: %w", spec.Name, err)
	}

	if needDown && wasUp {
		if err := k.h.LinkSetUp(cur); err != nil {
			return fmt.Errorf("set bond %s up: %w", spec.Name, err)
		}
	}

	return nil
}

// updateBridge brings an existing bridge's VLAN filtering in line with
// its spec.
func updateBridge(k *kernel, link netlink.Link, spec *network.LinkSpecSpec) error {
	cur, ok := link.(*netlink.Bridge)
	if !ok {
		return fmt.Errorf("link %s is a %s link, not a bridge", spec.Name, link.Type())
	}

	want := spec.Bridge.VLANFiltering
	if have := cur.VlanFiltering != nil && *cur.VlanFiltering; have == want {
		return nil
	}

	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.Index = cur.Name, cur.Index

	if err := k.h.LinkModify(&netlink.Bridge{LinkAttrs: attrs, VlanFiltering: &want}); err != nil {
		return fmt.Errorf("set VLAN filtering of bridge %s to %v: %w", spec.Name, want, err)
	}

	return nil
}
