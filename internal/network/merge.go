package network

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// mergeController is the generic XMergeController: it folds the layered
// specs of one type in ConfigNamespace into the final specs in Namespace.
// For each ID the spec of the highest layer wins, whole unless combine
// takes some fields from the lower one.
type mergeController[S layered] struct {
	name string
	typ  string
	// combine, when set, merges a lower layer's spec into a higher one's.
	combine func(lower, higher S) S
}

func newMerge[S layered](name, typ string) *mergeController[S] {
	return &mergeController[S]{name: name, typ: typ}
}

// mergeLinks keeps the higher layer's link spec but takes the MTU from a
// lower layer (DHCP's) when the higher one sets none, as Talos merges link
// fields across layers.
func mergeLinks(lower, higher network.LinkSpecSpec) network.LinkSpecSpec {
	if higher.MTU == 0 {
		higher.MTU = lower.MTU
	}

	return higher
}

func (c *mergeController[S]) Name() string { return c.name }

func (c *mergeController[S]) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.ConfigNamespace, Type: c.typ}}
}

func (c *mergeController[S]) Outputs() []bus.Output {
	return []bus.Output{{Type: c.typ, Kind: bus.OutputShared}}
}

func (c *mergeController[S]) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		items, err := bus.ListAs[*bus.Typed[S]](ctx, r, bus.Kind{Namespace: network.ConfigNamespace, Type: c.typ})
		if err != nil {
			return err
		}

		want := map[string]S{}

		// Items come sorted by layered ID, so among equal layers the
		// result does not depend on write order.
		for _, it := range items {
			if it.Metadata().Phase == bus.PhaseTearingDown {
				continue
			}

			id, spec := unlayeredID(it.Metadata().ID), *it.TypedSpec()

			cur, ok := want[id]

			switch {
			case !ok:
				want[id] = spec
			case c.combine != nil && spec.SpecLayer() > cur.SpecLayer():
				want[id] = c.combine(cur, spec)
			case c.combine != nil:
				want[id] = c.combine(spec, cur)
			case spec.SpecLayer() > cur.SpecLayer():
				want[id] = spec
			}
		}

		return syncOutputs(ctx, r, c.name, network.Namespace, c.typ, want)
	})
}
