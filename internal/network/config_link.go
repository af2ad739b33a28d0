package network

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// NewLinkConfigController builds LinkSpecs: lo up and the default DHCP
// link up (default), the ip= link up (cmdline), and every configured interface, its bond slaves and its
// VLANs (configuration).
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

	for _, d := range src.devices(is) {
		spec := network.LinkSpecSpec{Name: d.name, Up: true, MTU: d.dev.MTU, Layer: network.LayerConfiguration}

		switch {
		case d.dev.Dummy:
			spec.Logical, spec.Kind = true, network.KindDummy
		case d.dev.Bond != nil:
			spec.Logical, spec.Kind, spec.Bond = true, network.KindBond, bondSpec(d.dev.Bond)

			for _, slave := range d.dev.Bond.Interfaces {
				out.add(slave, network.LinkSpecSpec{Name: slave, Up: true, BondMaster: d.name, Layer: network.LayerConfiguration})
			}
		case d.dev.WireGuard != nil:
			wg, err := wireGuardSpec(d.dev.WireGuard)
			if err != nil {
				is.fail("link/"+d.name, fmt.Errorf("link %s: %w", d.name, err))
				continue
			}

			spec.Logical, spec.Kind, spec.WireGuard = true, network.KindWireGuard, wg
		}

		out.add(d.name, spec)

		for _, v := range d.dev.VLANs {
			name := vlanName(d.name, v.ID)
			out.add(name, network.LinkSpecSpec{
				Name: name, Logical: true, Up: true, MTU: v.MTU, Kind: network.KindVLAN,
				ParentName: d.name, VLAN: network.VLANSpec{ID: v.ID}, Layer: network.LayerConfiguration,
			})
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
