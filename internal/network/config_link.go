package network

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// NewLinkConfigController builds LinkSpecs: lo up and the default DHCP
// link up (default), the ip= link up (cmdline), and every configured
// interface, its bond or bridge members and its VLANs, with what the
// link documents say beyond machine.network (configuration).
func NewLinkConfigController(opts *Options) *configController[network.LinkSpecSpec] {
	return &configController[network.LinkSpecSpec]{name: "network.LinkConfigController", typ: network.LinkSpecType, opts: opts, build: buildLinks}
}

func buildLinks(src *source, out *layeredSet[network.LinkSpecSpec], is issues) {
	out.add("lo", network.LinkSpecSpec{Name: "lo", Up: true, Layer: network.LayerDefault})

	if name := src.defaultDHCPLink(); name != "" {
		out.add(name, network.LinkSpecSpec{Name: name, Up: true, Layer: network.LayerDefault})
	}

	if src.cmdline.HasIP {
		if name := src.cmdlineLink(); name != "" && !src.ignored(name) {
			out.add(name, network.LinkSpecSpec{Name: name, Up: true, Layer: network.LayerCmdline})
		}
	}

	for _, spec := range src.platform.Links {
		if !src.ignored(spec.Name) {
			spec.Layer = network.LayerPlatform
			out.add(spec.Name, spec)
		}
	}

	devs := src.devices(is)
	// A bond's or bridge's member may have an entry of its own (for its
	// MTU): it is one spec, enslaved.
	links := map[string]*network.LinkSpecSpec{}
	var order []string

	link := func(name string) *network.LinkSpecSpec {
		if l, ok := links[name]; ok {
			return l
		}

		links[name] = &network.LinkSpecSpec{Name: name, Up: true, Layer: network.LayerConfiguration}
		order = append(order, name)

		return links[name]
	}

	for _, d := range devs {
		spec := link(d.name)
		spec.MTU = d.dev.MTU

		switch {
		case d.dev.Dummy:
			spec.Logical, spec.Kind = true, network.KindDummy
		case d.dev.Bond != nil:
			spec.Logical, spec.Kind, spec.Bond = true, network.KindBond, bondSpec(d.dev.Bond)

			for _, member := range d.dev.Bond.Interfaces {
				link(member).BondMaster = d.name
			}
		case d.dev.Bridge != nil:
			spec.Logical, spec.Kind = true, network.KindBridge
			if v := d.dev.Bridge.VLAN; v != nil {
				spec.Bridge.VLANFiltering = v.FilteringEnabled
			}

			for _, port := range d.dev.Bridge.Interfaces {
				link(port).BridgeMaster = d.name
			}
		case d.dev.WireGuard != nil:
			wg, err := wireGuardSpec(d.dev.WireGuard)
			if err != nil {
				is.fail("link/"+d.name, fmt.Errorf("link %s: %w", d.name, err))
				delete(links, d.name)

				continue
			}

			spec.Logical, spec.Kind, spec.WireGuard = true, network.KindWireGuard, wg
		}

		if p := d.dev.BridgePort; p != nil && p.Master != "" {
			spec.BridgeMaster = p.Master
		}

		for _, v := range d.dev.VLANs {
			name := src.vlanName(d.name, v.ID)
			vl := link(name)
			vl.Logical, vl.MTU, vl.Kind, vl.ParentName, vl.VLAN = true, v.MTU, network.KindVLAN, d.name, network.VLANSpec{ID: v.ID}
		}
	}

	for _, name := range order {
		if spec, ok := links[name]; ok {
			src.applyLinkDocument(spec)
			out.add(name, *spec)
		}
	}
}

func bondSpec(b *configs.Bond) network.BondSpec {
	return network.BondSpec{
		Mode: b.Mode, HashPolicy: b.HashPolicy, LACPRate: b.LACPRate,
		MIIMon: b.MIIMon, UpDelay: b.UpDelay, DownDelay: b.DownDelay, MinLinks: b.MinLinks,
	}
}

func wireGuardSpec(w *configs.WireGuardConfig) (network.WireGuardSpec, error) {
	spec := network.WireGuardSpec{PrivateKey: w.PrivateKey, ListenPort: w.ListenPort, FirewallMark: w.FirewallMark}

	for i, p := range w.Peers {
		peer := network.WireGuardPeer{PublicKey: p.PublicKey, Endpoint: p.Endpoint, PersistentKeepalive: p.PersistentKeepaliveInterval}

		for _, a := range p.AllowedIPs {
			pfx, err := parsePrefixOrAddr(a)
			if err != nil {
				return network.WireGuardSpec{}, fmt.Errorf("wireguard peer %d allowed IP: %w", i, err)
			}

			peer.AllowedIPs = append(peer.AllowedIPs, pfx)
		}

		spec.Peers = append(spec.Peers, peer)
	}

	return spec, nil
}

// parsePrefixOrAddr accepts "10.0.0.0/8" or a bare address (a host
// prefix).
func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}

	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}

	return netip.PrefixFrom(a, a.BitLen()), nil
}
