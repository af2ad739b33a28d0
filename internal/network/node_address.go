package network

import (
	"cmp"
	"context"
	"net/netip"
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// NodeAddressController derives NodeAddresses from AddressStatuses:
// "current" is every global address not on a loopback link (IPv4 first,
// then by address), "default" the first of those that is not a host
// address (a shared IP).
type NodeAddressController struct{}

func (c *NodeAddressController) Name() string { return "network.NodeAddressController" }

func (c *NodeAddressController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.AddressStatusType}, {Namespace: network.Namespace, Type: network.LinkStatusType}}
}

func (c *NodeAddressController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.NodeAddressType}}
}

func (c *NodeAddressController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		addrs, err := bus.ListAs[*network.AddressStatus](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.AddressStatusType})
		if err != nil {
			return err
		}

		links, err := bus.ListAs[*network.LinkStatus](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.LinkStatusType})
		if err != nil {
			return err
		}

		loopback := map[string]bool{}
		for _, l := range links {
			loopback[l.Metadata().ID] = l.TypedSpec().Type == "loopback"
		}

		var current []netip.Prefix

		for _, a := range addrs {
			st := a.TypedSpec()
			if loopback[st.LinkName] || st.Scope != ScopeGlobal || st.Address.Addr().IsLinkLocalUnicast() {
				continue
			}

			current = append(current, st.Address)
		}

		slices.SortFunc(current, func(a, b netip.Prefix) int {
			if a.Addr().Is4() != b.Addr().Is4() {
				if a.Addr().Is4() {
					return -1
				}

				return 1
			}

			return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
		})

		current = slices.Compact(current)
		want := map[string]network.NodeAddressSpec{network.NodeAddressesCur: {Addresses: current}}

		// The default is the first address with a subnet: a host address
		// (/32, /128) is a shared IP, which moves between nodes and must
		// not name this one.
		if i := slices.IndexFunc(current, func(p netip.Prefix) bool { return p.Bits() < p.Addr().BitLen() }); i >= 0 {
			want[network.NodeAddressesDef] = network.NodeAddressSpec{Addresses: current[i : i+1 : i+1]}
		} else if len(current) > 0 {
			want[network.NodeAddressesDef] = network.NodeAddressSpec{Addresses: current[:1:1]}
		}

		return syncOutputs(ctx, r, c.Name(), network.Namespace, network.NodeAddressType, want)
	})
}
