package network

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// RouteStatusController mirrors the namespace's routes (every table but
// local, whose entries follow the addresses) into RouteStatuses, kept
// current from a netlink subscription.
type RouteStatusController struct{ opts *Options }

// NewRouteStatusController makes the controller.
func NewRouteStatusController(opts *Options) *RouteStatusController {
	return &RouteStatusController{opts: opts}
}

func (c *RouteStatusController) Name() string { return "network.RouteStatusController" }

func (c *RouteStatusController) Inputs() []bus.Input { return nil }

func (c *RouteStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.RouteStatusType}}
}

func (c *RouteStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return runWithKernel(ctx, r, c.opts.NetNSPath, watchRoutes|watchLinks, func(ctx context.Context, k *kernel) error {
		want, err := c.read(k)
		if err != nil {
			return err
		}

		return syncOutputs(ctx, r, c.Name(), network.Namespace, network.RouteStatusType, want)
	})
}

func (c *RouteStatusController) read(k *kernel) (map[string]network.RouteStatusSpec, error) {
	names, err := linkNames(k)
	if err != nil {
		return nil, err
	}

	routes, err := retryDump(func() ([]netlink.Route, error) {
		return k.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: 0}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}

	want := make(map[string]network.RouteStatusSpec, len(routes))

	for _, rt := range routes {
		if network.RoutingTable(rt.Table) == network.TableLocal {
			continue
		}

		st := routeStatus(rt, names)

		id := network.RouteID(st.Table, st.Family, st.Gateway, st.Destination, st.Priority)
		if _, dup := want[id]; dup {
			// The same destination and metric on several links (IPv6
			// multicast, link-local): the link tells them apart.
			id += "/" + st.OutLinkName
		}

		want[id] = st
	}

	return want, nil
}

// routeStatus is a kernel route as a RouteStatus; names maps link indexes
// to link names.
func routeStatus(rt netlink.Route, names map[int]string) network.RouteStatusSpec {
	st := network.RouteStatusSpec{
		OutLinkIndex: uint32(rt.LinkIndex), OutLinkName: names[rt.LinkIndex],
		Table: network.RoutingTable(rt.Table), Priority: uint32(rt.Priority), Scope: scopeName(rt.Scope),
		Type: network.RouteType(rt.Type), Flags: network.RouteFlags(rt.Flags), Protocol: network.RouteProto(rt.Protocol),
		MTU: uint32(rt.MTU), Managed: rt.Protocol == network.RouteProtocol,
	}

	st.Destination, _ = prefixOf(rt.Dst)
	if st.Destination.IsValid() && st.Destination.Bits() == 0 {
		st.Destination = netip.Prefix{}
	}

	st.Gateway, _ = netip.AddrFromSlice(rt.Gw)
	st.Gateway = st.Gateway.Unmap()
	st.Source, _ = netip.AddrFromSlice(rt.Src)
	st.Source = st.Source.Unmap()

	switch {
	case rt.Family == netlink.FAMILY_V6:
		st.Family = network.FamilyInet6
	case rt.Family == netlink.FAMILY_V4:
		st.Family = network.FamilyInet4
	case st.Destination.IsValid():
		st.Family = network.FamilyOf(st.Destination.Addr())
	case st.Gateway.IsValid():
		st.Family = network.FamilyOf(st.Gateway)
	}

	return st
}
