package network

import (
	"fmt"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// NewAddressConfigController builds AddressSpecs from ip= (cmdline) and
// from each interface's and VLAN's addresses and legacy cidr
// (configuration).
func NewAddressConfigController(opts *Options) *configController[network.AddressSpecSpec] {
	return &configController[network.AddressSpecSpec]{name: "network.AddressConfigController", typ: network.AddressSpecType, opts: opts, build: buildAddresses}
}

func buildAddresses(src *source, out *layeredSet[network.AddressSpecSpec], is issues) {
	if c := src.cmdline; c.Address.IsValid() {
		if name := src.cmdlineLink(); name != "" && !src.ignored(name) {
			spec := network.AddressSpecSpec{Address: c.Address, LinkName: name, Family: network.FamilyOf(c.Address.Addr()), Layer: network.LayerCmdline}
			out.add(spec.ID(), spec)
		}
	}

	add := func(link string, addrs []string, cidr string) {
		if cidr != "" && !slices.Contains(addrs, cidr) {
			addrs = append(slices.Clone(addrs), cidr)
		}

		for _, a := range addrs {
			p, err := configs.ParseAddressPrefix(a)
			if err != nil {
				is.fail(fmt.Sprintf("address/%s/%s", link, a), fmt.Errorf("address %q on %s: %w", a, link, err))
				continue
			}

			spec := network.AddressSpecSpec{Address: p, LinkName: link, Family: network.FamilyOf(p.Addr()), Layer: network.LayerConfiguration}
			out.add(spec.ID(), spec)
		}
	}

	for _, spec := range src.platform.Addresses {
		if !src.ignored(spec.LinkName) {
			spec.Layer = network.LayerPlatform
			out.add(spec.ID(), spec)
		}
	}

	for _, d := range src.devices(nil) {
		add(d.name, d.dev.Addresses, d.dev.CIDR)

		for _, v := range d.dev.VLANs {
			add(src.vlanName(d.name, v.ID), v.Addresses, v.CIDR)
		}
	}
}
