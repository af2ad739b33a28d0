package network

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// configController is the shape every XConfigController shares: read the
// machine config, the kernel command line and the links, build layered
// specs, and publish them in ConfigNamespace as "<layer>/<id>". The build
// function is what differs per kind (config_*.go).
type configController[S layered] struct {
	name  string
	typ   string
	opts  *Options
	build func(src *source, out *layeredSet[S], is issues)
}

// layered is what the merge needs from a spec.
type layered interface {
	SpecLayer() network.ConfigLayer
}

// layeredSet collects specs by their layered ID.
type layeredSet[S layered] map[string]S

func (s layeredSet[S]) add(id string, spec S) { s[network.LayeredID(spec.SpecLayer(), id)] = spec }

func (c *configController[S]) Name() string { return c.name }

func (c *configController[S]) Inputs() []bus.Input { return configInputs }

func (c *configController[S]) Outputs() []bus.Output {
	return []bus.Output{{Type: c.typ, Kind: bus.OutputShared}, issueOutput}
}

func (c *configController[S]) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		src, err := readSource(ctx, r, c.opts)
		if err != nil {
			return err
		}

		out, is := layeredSet[S]{}, issues{}
		c.build(src, &out, is)

		if err := syncOutputs(ctx, r, c.name, network.ConfigNamespace, c.typ, map[string]S(out)); err != nil {
			return err
		}

		return is.sync(ctx, r, c.name)
	})
}
