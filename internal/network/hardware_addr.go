package network

import (
	"context"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// HardwareAddrController publishes the first hardware address: Talos's
// HardwareAddresses/first, the MAC of the physical link that sorts first
// by name. A container has no physical link (its eth0 is one end of a
// veth pair), so there the first Ethernet link with an address stands in,
// rather than leaving the machine without one.
type HardwareAddrController struct{}

func (c *HardwareAddrController) Name() string { return "network.HardwareAddrController" }

func (c *HardwareAddrController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.LinkStatusType}}
}

func (c *HardwareAddrController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.HardwareAddrType}}
}

func (c *HardwareAddrController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		links, err := bus.ListAs[*network.LinkStatus](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.LinkStatusType})
		if err != nil {
			return err
		}

		out := map[string]network.HardwareAddrSpec{}
		if name, addr, ok := firstHardwareAddr(links); ok {
			out[network.HardwareAddrFirst] = network.HardwareAddrSpec{Name: name, HardwareAddr: addr}
		}

		return syncOutputs(ctx, r, c.Name(), network.Namespace, network.HardwareAddrType, out)
	})
}

// firstHardwareAddr picks the physical Ethernet link first by name, else
// any Ethernet link with an address (veth, in a container).
func firstHardwareAddr(links []*network.LinkStatus) (name, addr string, ok bool) {
	var physical, other []*network.LinkStatus

	for _, l := range links {
		s := l.TypedSpec()
		if s.Type != "ether" || s.HardwareAddr == "" || strings.Trim(s.HardwareAddr, "0:") == "" {
			continue
		}

		if s.Kind == "" {
			physical = append(physical, l)
		} else {
			other = append(other, l)
		}
	}

	for _, set := range [][]*network.LinkStatus{physical, other} {
		if len(set) == 0 {
			continue
		}

		first := slices.MinFunc(set, func(a, b *network.LinkStatus) int { return strings.Compare(a.Metadata().ID, b.Metadata().ID) })

		return first.Metadata().ID, first.TypedSpec().HardwareAddr, true
	}

	return "", "", false
}
