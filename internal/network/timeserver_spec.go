package network

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// TimeServerSpecController turns the merged TimeServerSpec into the
// TimeServerStatus timed reads.
type TimeServerSpecController struct{}

func (c *TimeServerSpecController) Name() string { return "network.TimeServerSpecController" }

func (c *TimeServerSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.TimeServerSpecType}}
}

func (c *TimeServerSpecController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.TimeServerStatusType}}
}

func (c *TimeServerSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		specs, err := bus.ListAs[*network.TimeServerSpec](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.TimeServerSpecType})
		if err != nil {
			return err
		}

		want := map[string]network.TimeServerStatusSpec{}
		for _, s := range specs {
			want[s.Metadata().ID] = network.TimeServerStatusSpec{NTPServers: s.TypedSpec().NTPServers}
		}

		return syncOutputs(ctx, r, c.Name(), network.Namespace, network.TimeServerStatusType, want)
	})
}
