package network

import (
	"fmt"
	"slices"
)

// NewAddressConfigController builds AddressSpecs from ip= (cmdline) and
// from each interface's and VLAN's addresses and legacy cidr
// (configuration).
func NewAddressConfigController(opts *Options) *configController[AddressSpecSpec] {
	return &configController[AddressSpecSpec]{name: "network.AddressConfigController", typ: AddressSpecType, opts: opts, build: buildAddresses}
}

func buildAddresses(src *source, out *layeredSet[AddressSpecSpec], is issues) {
	if c := src.cmdline; c.Address.IsValid() {
		if name := src.cmdlineLink(); name != "" && !src.ignored(name) {
			spec := AddressSpecSpec{Address: c.Address, LinkName: name, Family: familyOf(c.Address.Addr()), Layer: LayerCmdline}
			out.add(spec.ID(), spec)
		}
	}

	add := func(link string, addrs []string, cidr string) {
		if cidr != "" && !slices.Contains(addrs, cidr) {
			addrs = append(slices.Clone(addrs), cidr)
		}

		for _, a := range addrs {
			p, err := parsePrefixOrAddr(a)
			if err != nil {
				is.fail(fmt.Sprintf("address/%s/%s", link, a), fmt.Errorf("address %q on %s: %w", a, link, err))
				continue
			}

			spec := AddressSpecSpec{Address: p, LinkName: link, Family: familyOf(p.Addr()), Layer: LayerConfiguration}
			out.add(spec.ID(), spec)
		}
	}

	for _, d := range src.devices(nil) {
		add(d.name, d.dev.Addresses, d.dev.CIDR)

		for _, v := range d.dev.VLANs {
			add(vlanName(d.name, v.ID), v.Addresses, v.CIDR)
		}
	}
}
