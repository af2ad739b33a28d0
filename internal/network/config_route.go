package network

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// Route scopes.
const (
	ScopeGlobal = "global"
	ScopeLink   = "link"
	ScopeHost   = "host"
)

// NewRouteConfigController builds RouteSpecs from the ip= gateway
// (cmdline) and from each interface's and VLAN's routes, and the link
// documents' routes of other tables (configuration).
func NewRouteConfigController(opts *Options) *configController[network.RouteSpecSpec] {
	return &configController[network.RouteSpecSpec]{name: "network.RouteConfigController", typ: network.RouteSpecType, opts: opts, build: buildRoutes}
}

func buildRoutes(src *source, out *layeredSet[network.RouteSpecSpec], is issues) {
	if c := src.cmdline; c.Gateway.IsValid() {
		if name := src.cmdlineLink(); name != "" && !src.ignored(name) {
			spec := network.RouteSpecSpec{
				Family: network.FamilyOf(c.Gateway), Gateway: c.Gateway, OutLinkName: name, Table: network.TableMain,
				Priority: network.DefaultRouteMetric, Scope: ScopeGlobal, Type: network.RouteTypeUnicast, Protocol: network.ProtoBoot, Layer: network.LayerCmdline,
			}
			if c.Address.IsValid() {
				spec.Source = c.Address.Addr()
			}

			out.add(spec.ID(), spec)
		}
	}

	for _, spec := range src.platform.Routes {
		if spec.OutLinkName == "" || !src.ignored(spec.OutLinkName) {
			spec.Layer = network.LayerPlatform
			out.add(spec.ID(), spec)
		}
	}

	add := func(link string, routes []configs.Route) {
		for i, rt := range routes {
			spec, err := routeSpec(link, rt)
			if err != nil {
				is.fail(fmt.Sprintf("route/%s/%d", link, i), fmt.Errorf("route %d on %s: %w", i, link, err))
				continue
			}

			out.add(spec.ID(), spec)
		}
	}

	for _, d := range src.devices(nil) {
		add(d.name, d.dev.Routes)

		for _, v := range d.dev.VLANs {
			add(src.vlanName(d.name, v.ID), v.Routes)
		}
	}

	src.documentRoutes(out, is)
}

func routeSpec(link string, rt configs.Route) (network.RouteSpecSpec, error) {
	spec := network.RouteSpecSpec{
		OutLinkName: link, Table: network.TableMain, Priority: rt.Metric, MTU: rt.MTU, Scope: ScopeGlobal,
		Type: network.RouteTypeUnicast, Protocol: network.ProtoStatic, Layer: network.LayerConfiguration,
	}
	if spec.Priority == 0 {
		spec.Priority = network.DefaultRouteMetric
	}

	var err error

	if rt.Gateway != "" {
		if spec.Gateway, err = netip.ParseAddr(rt.Gateway); err != nil {
			return spec, fmt.Errorf("gateway: %w", err)
		}
	}

	if rt.Source != "" {
		if spec.Source, err = netip.ParseAddr(rt.Source); err != nil {
			return spec, fmt.Errorf("source: %w", err)
		}
	}

	if rt.Network != "" {
		if spec.Destination, err = parsePrefixOrAddr(rt.Network); err != nil {
			return spec, fmt.Errorf("network: %w", err)
		}

		spec.Destination = spec.Destination.Masked()
	}

	switch {
	case spec.Destination.IsValid():
		spec.Family = network.FamilyOf(spec.Destination.Addr())
	case spec.Gateway.IsValid():
		spec.Family = network.FamilyOf(spec.Gateway)
	default:
		return spec, errors.New("a default route needs a gateway")
	}

	if spec.Gateway.IsValid() && network.FamilyOf(spec.Gateway) != spec.Family {
		return spec, fmt.Errorf("gateway %s and network %s are of different families", spec.Gateway, spec.Destination)
	}

	if spec.Destination.IsValid() && spec.Destination.Bits() == 0 {
		spec.Destination = netip.Prefix{} // the default route has no destination
	}

	if !spec.Gateway.IsValid() {
		spec.Scope = ScopeLink
	}

	return spec, nil
}
