package network

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// PlatformConfigController publishes the platform's network config as the
// PlatformConfig resource the config controllers layer at LayerPlatform:
// Options.Platform at once, then, when Options.PlatformFetch is set (a
// platform that hands its config over the network), what it returns once
// it answers, which replaces the first. The fetch runs here rather than
// before networkd starts because it needs the network that networkd
// brings up (default DHCP).
type PlatformConfigController struct{ opts *Options }

// NewPlatformConfigController makes the controller.
func NewPlatformConfigController(opts *Options) *PlatformConfigController {
	return &PlatformConfigController{opts: opts}
}

func (c *PlatformConfigController) Name() string { return "network.PlatformConfigController" }

func (c *PlatformConfigController) Inputs() []bus.Input { return nil }

func (c *PlatformConfigController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.PlatformConfigType}}
}

func (c *PlatformConfigController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	if err := c.publish(ctx, r, c.opts.Platform); err != nil {
		return err
	}

	if c.opts.PlatformFetch != nil {
		// The fetch retries until it gets an answer; a refusal (a bad
		// network-config) keeps what is published, and the fetch says why.
		if spec, err := c.opts.PlatformFetch(ctx); err == nil {
			if err := c.publish(ctx, r, spec); err != nil {
				return err
			}
		}
	}

	<-ctx.Done()

	return nil
}

func (c *PlatformConfigController) publish(ctx context.Context, r bus.ControllerRuntime, spec *network.PlatformConfigSpec) error {
	want := map[string]network.PlatformConfigSpec{}
	if !spec.IsEmpty() {
		want[network.PlatformConfigID] = *spec
	}

	return syncOutputs(ctx, r, c.Name(), network.Namespace, network.PlatformConfigType, want)
}
