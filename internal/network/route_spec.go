package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// RouteSpecController applies RouteSpecs. Every route it adds carries
// RouteProtocol; a kernel route with that protocol and no spec is removed,
// any other route is never touched (a spec that collides with one is
// reported, not forced).
type RouteSpecController struct{ opts *Options }

// NewRouteSpecController makes the controller.
func NewRouteSpecController(opts *Options) *RouteSpecController {
	return &RouteSpecController{opts: opts}
}

func (c *RouteSpecController) Name() string { return "network.RouteSpecController" }

func (c *RouteSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.RouteSpecType}}
}

func (c *RouteSpecController) Outputs() []bus.Output { return []bus.Output{issueOutput} }

func (c *RouteSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	// Addresses and links matter: a gateway becomes reachable when its
	// subnet's address arrives, and routes vanish with a downed link.
	return runApply(ctx, r, c.opts.NetNSPath, watchRoutes|watchAddrs|watchLinks, c.Name(), func(ctx context.Context, k *kernel) (issues, error) {
		return c.reconcile(ctx, r, k)
	})
}

// routeKey is what makes a kernel route unique (with tos, always 0 here).
type routeKey struct {
	family string
	table  network.RoutingTable
	dst    netip.Prefix
	prio   uint32
}

func (c *RouteSpecController) reconcile(ctx context.Context, r bus.ControllerRuntime, k *kernel) (issues, error) {
	specs, err := bus.ListAs[*network.RouteSpec](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.RouteSpecType})
	if err != nil {
		return nil, err
	}

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

	have := map[routeKey]netlink.Route{}

	for _, rt := range routes {
		st := routeStatus(rt, names)
		have[routeKey{st.Family, st.Table, st.Destination, st.Priority}] = rt
	}

	is := issues{}
	wanted := map[routeKey]bool{}

	for _, res := range specs {
		spec := res.TypedSpec()
		key := routeKey{spec.Family, spec.Table, spec.Destination, spec.Priority}
		wanted[key] = true

		if err := c.apply(k, spec, have[key], names); err != nil {
			id := "route/" + spec.ID()
			if errors.Is(err, errLinkMissing) {
				is.pending(id, "%v", err)
			} else {
				is.fail(id, err)
			}
		}
	}

	for key, rt := range have {
		if rt.Protocol != network.RouteProtocol || wanted[key] {
			continue
		}

		if err := k.h.RouteDel(&rt); err != nil && !errors.Is(err, unix.ESRCH) {
			is.fail("route/"+network.RouteID(key.table, key.family, netip.Addr{}, key.dst, key.prio), fmt.Errorf("remove route: %w", err))
		}
	}

	return is, nil
}

// apply makes the kernel hold the route; cur is the kernel's route with
// the same key, if any.
func (c *RouteSpecController) apply(k *kernel, spec *network.RouteSpecSpec, cur netlink.Route, names map[int]string) error {
	want, err := kernelRoute(k, spec)
	if err != nil {
		return err
	}

	exists := cur.Table != 0

	switch {
	case !exists:
		if err := k.h.RouteAdd(want); err != nil {
			return fmt.Errorf("add route %s: %w", spec.ID(), err)
		}
	case cur.Protocol != network.RouteProtocol:
		return fmt.Errorf("route %s conflicts with a route in the kernel not managed by networkd (protocol %d, via %s dev %s)",
			spec.ID(), cur.Protocol, cur.Gw, names[cur.LinkIndex])
	case !sameRoute(cur, want):
		if err := k.h.RouteReplace(want); err != nil {
			return fmt.Errorf("replace route %s: %w", spec.ID(), err)
		}
	}

	return nil
}

func kernelRoute(k *kernel, spec *network.RouteSpecSpec) (*netlink.Route, error) {
	// The kernel copy always carries RouteProtocol, whatever the spec's
	// Protocol (its origin) says: that is how networkd knows its routes.
	rt := &netlink.Route{
		Table: int(spec.Table), Priority: int(spec.Priority), Protocol: network.RouteProtocol, MTU: int(spec.MTU),
		Scope: netlink.SCOPE_UNIVERSE, Family: netlink.FAMILY_V4, Type: int(spec.Type),
	}

	if spec.Type == network.RouteTypeUnspec {
		rt.Type = int(network.RouteTypeUnicast) // what the kernel reports for it
	}

	if spec.Family == network.FamilyInet6 {
		rt.Family = netlink.FAMILY_V6
	}

	switch spec.Scope {
	case ScopeLink:
		rt.Scope = netlink.SCOPE_LINK
	case ScopeHost:
		rt.Scope = netlink.SCOPE_HOST
	}

	if spec.Destination.IsValid() {
		rt.Dst = ipNet(spec.Destination)
	} else {
		zero := netip.IPv4Unspecified()
		if spec.Family == network.FamilyInet6 {
			zero = netip.IPv6Unspecified()
		}

		rt.Dst = ipNet(netip.PrefixFrom(zero, 0))
	}

	if spec.Gateway.IsValid() {
		rt.Gw = spec.Gateway.AsSlice()
	}

	if spec.Source.IsValid() {
		rt.Src = spec.Source.AsSlice()
	}

	if spec.OutLinkName != "" {
		link, err := k.h.LinkByName(spec.OutLinkName)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil, fmt.Errorf("%w: route %s waits for link %s", errLinkMissing, spec.ID(), spec.OutLinkName)
			}

			return nil, fmt.Errorf("look up link %s: %w", spec.OutLinkName, err)
		}

		rt.LinkIndex = link.Attrs().Index
	}

	return rt, nil
}

func sameRoute(cur netlink.Route, want *netlink.Route) bool {
	return cur.LinkIndex == want.LinkIndex && cur.Gw.Equal(want.Gw) && ipEqual(cur.Src, want.Src) &&
		cur.MTU == want.MTU && cur.Scope == want.Scope && cur.Type == want.Type
}

func ipEqual(a, b net.IP) bool { return (len(a) == 0 && len(b) == 0) || a.Equal(b) }
