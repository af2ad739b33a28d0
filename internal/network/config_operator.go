package network

import (
	"net/netip"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// NewOperatorConfigController builds OperatorSpecs: a DHCP client for
// ip=...:dhcp (cmdline) and for every interface or VLAN with dhcp: true
// (configuration). DHCPv4 runs unless dhcpOptions.ipv4 is false; DHCPv6
// only when dhcpOptions.ipv6 is true, as in Talos. A vip on an interface or
// VLAN of a control-plane node gets a vip operator (validation refuses it
// elsewhere; a worker's config is ignored here all the same), and so does
// a Layer2VIPConfig. A DHCPv4Config adds its client's options.
func NewOperatorConfigController(opts *Options) *configController[network.OperatorSpecSpec] {
	return &configController[network.OperatorSpecSpec]{name: "network.OperatorConfigController", typ: network.OperatorSpecType, opts: opts, build: buildOperators}
}

func buildOperators(src *source, out *layeredSet[network.OperatorSpecSpec], _ issues) {
	skipHostname := src.net != nil && src.net.Hostname != ""

	// Default DHCP: a metal machine gets an address in maintenance mode.
	if name := src.defaultDHCPLink(); name != "" {
		spec := network.OperatorSpecSpec{Operator: network.OperatorDHCP4, LinkName: name, RequireUp: true, RouteMetric: network.DefaultRouteMetric,
			SkipHostnameRequest: skipHostname, Layer: network.LayerDefault}
		out.add(spec.ID(), spec)
	}

	for _, spec := range src.platform.Operators {
		if !src.ignored(spec.LinkName) {
			spec.Layer = network.LayerPlatform
			spec.SkipHostnameRequest = spec.SkipHostnameRequest || skipHostname
			out.add(spec.ID(), spec)
		}
	}

	if src.cmdline.DHCP {
		if name := src.cmdlineLink(); name != "" && !src.ignored(name) {
			spec := network.OperatorSpecSpec{Operator: network.OperatorDHCP4, LinkName: name, RequireUp: true, RouteMetric: network.DefaultRouteMetric,
				SkipHostnameRequest: skipHostname || src.cmdline.Hostname != "", Layer: network.LayerCmdline}
			out.add(spec.ID(), spec)
		}
	}

	add := func(link string, dhcp bool, o *configs.DHCPOptions) {
		if !dhcp {
			return
		}

		metric := uint32(network.DefaultRouteMetric)
		v4, v6 := true, false

		if o != nil {
			if o.RouteMetric != 0 {
				metric = o.RouteMetric
			}

			if o.IPv4 != nil {
				v4 = *o.IPv4
			}

			if o.IPv6 != nil {
				v6 = *o.IPv6
			}
		}

		if v4 {
			spec := network.OperatorSpecSpec{Operator: network.OperatorDHCP4, LinkName: link, RequireUp: true, RouteMetric: metric,
				SkipHostnameRequest: skipHostname, Layer: network.LayerConfiguration}
			src.applyDHCPDocument(&spec)
			out.add(spec.ID(), spec)
		}

		if v6 {
			spec := network.OperatorSpecSpec{Operator: network.OperatorDHCP6, LinkName: link, RequireUp: true, RouteMetric: metric,
				SkipHostnameRequest: skipHostname, Layer: network.LayerConfiguration}
			if o != nil {
				spec.DUIDv6 = o.DUIDv6
			}

			out.add(spec.ID(), spec)
		}
	}

	vip := func(link string, v *configs.VIPConfig) {
		if v == nil || !src.controlPlane() {
			return
		}

		ip, err := netip.ParseAddr(v.IP)
		if err != nil {
			return // validation reports it
		}

		spec := network.OperatorSpecSpec{Operator: network.OperatorVIP, LinkName: link, RequireUp: true,
			VIP: network.VIPOperatorSpec{IP: ip, GratuitousARP: true}, Layer: network.LayerConfiguration}
		out.add(spec.ID(), spec)
	}

	for _, d := range src.devices(nil) {
		add(d.name, d.dev.DHCP, d.dev.DHCPOptions)
		vip(d.name, d.dev.VIP)

		for _, v := range d.dev.VLANs {
			add(src.vlanName(d.name, v.ID), v.DHCP, v.DHCPOptions)
			vip(src.vlanName(d.name, v.ID), v.VIP)
		}
	}

	src.documentVIPs(out)
}
