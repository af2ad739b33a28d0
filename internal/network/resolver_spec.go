package network

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// ResolverSpecController turns the merged ResolverSpec into the
// ResolverStatus in effect; the EtcFileController renders it.
type ResolverSpecController struct{}

func (c *ResolverSpecController) Name() string { return "network.ResolverSpecController" }

func (c *ResolverSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.ResolverSpecType}}
}

func (c *ResolverSpecController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.ResolverStatusType}}
}

func (c *ResolverSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		specs, err := bus.ListAs[*network.ResolverSpec](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.ResolverSpecType})
		if err != nil {
			return err
		}

		want := map[string]network.ResolverStatusSpec{}
		for _, s := range specs {
			want[s.Metadata().ID] = network.ResolverStatusSpec{DNSServers: s.TypedSpec().DNSServers, SearchDomains: s.TypedSpec().SearchDomains}
		}

		return syncOutputs(ctx, r, c.Name(), network.Namespace, network.ResolverStatusType, want)
	})
}
