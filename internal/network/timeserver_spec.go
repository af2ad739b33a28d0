package network

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
)

// TimeServerSpecController turns the merged TimeServerSpec into the
// TimeServerStatus timed reads.
type TimeServerSpecController struct{}

func (c *TimeServerSpecController) Name() string { return "network.TimeServerSpecController" }

func (c *TimeServerSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: Namespace, Type: TimeServerSpecType}}
}

func (c *TimeServerSpecController) Outputs() []bus.Output {
	return []bus.Output{{Type: TimeServerStatusType}}
}

func (c *TimeServerSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		specs, err := bus.ListAs[*TimeServerSpec](ctx, r, bus.Kind{Namespace: Namespace, Type: TimeServerSpecType})
		if err != nil {
			return err
		}

		want := map[string]TimeServerStatusSpec{}
		for _, s := range specs {
			want[s.Metadata().ID] = TimeServerStatusSpec{NTPServers: s.TypedSpec().NTPServers}
		}

		return syncOutputs(ctx, r, c.Name(), Namespace, TimeServerStatusType, want)
	})
}
