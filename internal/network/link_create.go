package network

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// createLink creates a logical link and marks it as networkd's. Only
// VLANs can be exercised on a host without the dummy, bonding and
// wireguard modules; the other kinds are covered in the QEMU guest.
func createLink(k *kernel, spec *LinkSpecSpec) (netlink.Link, error) {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = spec.Name

	if spec.MTU != 0 {
		attrs.MTU = int(spec.MTU)
	}

	var link netlink.Link

	switch spec.Kind {
	case KindDummy:
		link = &netlink.Dummy{LinkAttrs: attrs}
	case KindVLAN:
		parent, err := k.h.LinkByName(spec.ParentName)
		if err != nil {
			return nil, fmt.Errorf("%w: parent %s of VLAN %s: %v", errLinkMissing, spec.ParentName, spec.Name, err)
		}

		attrs.ParentIndex = parent.Attrs().Index
		link = &netlink.Vlan{LinkAttrs: attrs, VlanId: int(spec.VLAN.ID), VlanProtocol: netlink.VLAN_PROTOCOL_8021Q}
	case KindBond:
		b := netlink.NewLinkBond(attrs)
		if err := bondSettings(b, &spec.Bond); err != nil {
			return nil, fmt.Errorf("bond %s: %w", spec.Name, err)
		}

		link = b
	case KindWireGuard:
		link = &netlink.Wireguard{LinkAttrs: attrs}
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

func bondSettings(b *netlink.Bond, s *BondSpec) error {
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

// updateLogical brings a logical link that exists in line with its spec
// where that is more than MTU and state: today the WireGuard settings.
func updateLogical(k *kernel, link netlink.Link, spec *LinkSpecSpec) error {
	if spec.Kind != KindWireGuard {
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

func wireGuardConfig(s *WireGuardSpec) (wgtypes.Config, error) {
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
	}

	return true
}
