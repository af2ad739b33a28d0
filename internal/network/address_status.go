package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// AddressStatusController mirrors the namespace's addresses into
// AddressStatuses, kept current from a netlink subscription.
type AddressStatusController struct{ opts *Options }

// NewAddressStatusController makes the controller.
func NewAddressStatusController(opts *Options) *AddressStatusController {
	return &AddressStatusController{opts: opts}
}

func (c *AddressStatusController) Name() string { return "network.AddressStatusController" }

func (c *AddressStatusController) Inputs() []bus.Input { return nil }

func (c *AddressStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.AddressStatusType}}
}

func (c *AddressStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	// Link events matter too: a renamed link renames its addresses' IDs.
	return runWithKernel(ctx, r, c.opts.NetNSPath, watchAddrs|watchLinks, func(ctx context.Context, k *kernel) error {
		want, err := kernelAddresses(k)
		if err != nil {
			return err
		}

		return syncOutputs(ctx, r, c.Name(), network.Namespace, network.AddressStatusType, want)
	})
}

// kernelAddresses reads every address in the namespace, by Talos ID.
func kernelAddresses(k *kernel) (map[string]network.AddressStatusSpec, error) {
	names, err := linkNames(k)
	if err != nil {
		return nil, err
	}

	addrs, err := retryDump(func() ([]netlink.Addr, error) { return k.h.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}

	want := make(map[string]network.AddressStatusSpec, len(addrs))

	for _, a := range addrs {
		p, ok := prefixOf(a.IPNet)
		if !ok {
			continue
		}

		st := network.AddressStatusSpec{
			Address: p, LinkIndex: a.LinkIndex, LinkName: names[a.LinkIndex],
			Family: network.FamilyOf(p.Addr()), Scope: scopeName(netlink.Scope(a.Scope)), Flags: a.Flags,
		}
		st.Local, _ = addrOf(a.Peer)
		st.Broadcast, _ = netip.AddrFromSlice(a.Broadcast)
		st.Broadcast = st.Broadcast.Unmap()

		want[network.AddressID(st.LinkName, p)] = st
	}

	return want, nil
}

func linkNames(k *kernel) (map[int]string, error) {
	links, err := retryDump(k.h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}

	names := make(map[int]string, len(links))
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}

	return names, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}

	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}

	ones, _ := n.Mask.Size()

	return netip.PrefixFrom(a.Unmap(), ones), true
}

func addrOf(n *net.IPNet) (netip.Addr, bool) {
	if n == nil {
		return netip.Addr{}, false
	}

	a, ok := netip.AddrFromSlice(n.IP)

	return a.Unmap(), ok
}

func scopeName(s netlink.Scope) string {
	switch s {
	case netlink.SCOPE_UNIVERSE:
		return ScopeGlobal
	case netlink.SCOPE_LINK:
		return ScopeLink
	case netlink.SCOPE_HOST:
		return ScopeHost
	case netlink.SCOPE_SITE:
		return "site"
	case netlink.SCOPE_NOWHERE:
		return "nowhere"
	}

	return fmt.Sprintf("%d", int(s))
}
