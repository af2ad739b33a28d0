package network

import (
	"context"
	"fmt"
	"sync"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// OperatorSpecController runs one Operator per merged OperatorSpec (built
// by Options.Operators) while its link is up, and publishes what the
// operators report as operator-layer specs in ConfigNamespace, where the
// merge controllers pick them up.
type OperatorSpecController struct {
	opts *Options

	mu      sync.Mutex
	running map[string]*runningOperator // OperatorSpec ID -> operator
}

type runningOperator struct {
	spec   network.OperatorSpecSpec
	op     Operator
	cancel context.CancelFunc
	done   chan struct{}
}

// NewOperatorSpecController makes the controller.
func NewOperatorSpecController(opts *Options) *OperatorSpecController {
	return &OperatorSpecController{opts: opts, running: map[string]*runningOperator{}}
}

func (c *OperatorSpecController) Name() string { return "network.OperatorSpecController" }

func (c *OperatorSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.OperatorSpecType}, {Namespace: network.Namespace, Type: network.LinkStatusType}}
}

func (c *OperatorSpecController) Outputs() []bus.Output {
	out := []bus.Output{issueOutput}
	for _, t := range []string{network.LinkSpecType, network.AddressSpecType, network.RouteSpecType, network.HostnameSpecType, network.ResolverSpecType, network.TimeServerSpecType} {
		out = append(out, bus.Output{Type: t, Kind: bus.OutputShared})
	}

	return out
}

func (c *OperatorSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	defer c.stopAll()

	return loop(ctx, r, nil, func() error {
		is, err := c.reconcile(ctx, r)
		if err != nil {
			return err
		}

		if err := c.publish(ctx, r); err != nil {
			return err
		}

		return is.sync(ctx, r, c.Name())
	})
}

func (c *OperatorSpecController) reconcile(ctx context.Context, r bus.ControllerRuntime) (issues, error) {
	specs, err := bus.ListAs[*network.OperatorSpec](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.OperatorSpecType})
	if err != nil {
		return nil, err
	}

	links, err := bus.ListAs[*network.LinkStatus](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.LinkStatusType})
	if err != nil {
		return nil, err
	}

	up := map[string]bool{}
	for _, l := range links {
		up[l.Metadata().ID] = l.TypedSpec().Up
	}

	c.mu.Lock()
	defer c.mu.Unlock()

	is, keep := issues{}, map[string]bool{}

	for _, res := range specs {
		spec, id := *res.TypedSpec(), res.Metadata().ID

		if spec.RequireUp && !up[spec.LinkName] {
			is.pending("operator/"+id, "operator %s waits for link %s to be up", spec.Operator, spec.LinkName)
			continue
		}

		if cur, ok := c.running[id]; ok && cur.spec == spec {
			keep[id] = true
			continue
		}

		c.stopLocked(id)

		if c.opts.Operators == nil {
			is.pending("operator/"+id, "no %s operator is wired into networkd", spec.Operator)
			continue
		}

		op, err := c.opts.Operators(spec, OperatorEnv{
			NetNSPath: c.opts.NetNSPath,
			InNetNS:   func(fn func() error) error { return inNetNSPath(c.opts.NetNSPath, fn) },
			Logger:    r.Logger().With("operator", id),
		})

		switch {
		case err != nil:
			is.fail("operator/"+id, fmt.Errorf("start operator %s: %w", id, err))
			continue
		case op == nil:
			is.pending("operator/"+id, "no %s operator is wired into networkd", spec.Operator)
			continue
		}

		opCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		ro := &runningOperator{spec: spec, op: op, cancel: cancel, done: make(chan struct{})}

		go func() {
			defer close(ro.done)
			op.Run(opCtx, r.QueueReconcile)
		}()

		c.running[id] = ro
		keep[id] = true
	}

	for id := range c.running {
		if !keep[id] {
			c.stopLocked(id)
		}
	}

	return is, nil
}

func (c *OperatorSpecController) stopLocked(id string) {
	if ro, ok := c.running[id]; ok {
		ro.cancel()
		<-ro.done
		delete(c.running, id)
	}
}

func (c *OperatorSpecController) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()

	for id := range c.running {
		c.stopLocked(id)
	}
}

// publish writes every running operator's results at the operator layer.
func (c *OperatorSpecController) publish(ctx context.Context, r bus.ControllerRuntime) error {
	links, addrs, routes := layeredSet[network.LinkSpecSpec]{}, layeredSet[network.AddressSpecSpec]{}, layeredSet[network.RouteSpecSpec]{}
	hosts, resolvers, times := layeredSet[network.HostnameSpecSpec]{}, layeredSet[network.ResolverSpecSpec]{}, layeredSet[network.TimeServerSpecSpec]{}

	c.mu.Lock()

	for _, ro := range c.running {
		if ls, ok := ro.op.(LinkSettings); ok {
			for _, s := range ls.LinkSpecs() {
				s.Layer = network.LayerOperator
				links.add(s.Name, s)
			}
		}

		for _, s := range ro.op.AddressSpecs() {
			s.Layer = network.LayerOperator
			addrs.add(s.ID(), s)
		}

		for _, s := range ro.op.RouteSpecs() {
			s.Layer = network.LayerOperator
			routes.add(s.ID(), s)
		}

		for _, s := range ro.op.HostnameSpecs() {
			s.Layer = network.LayerOperator
			hosts.add(network.HostnameID, s)
		}

		for _, s := range ro.op.ResolverSpecs() {
			s.Layer = network.LayerOperator
			resolvers.add(network.ResolverID, s)
		}

		for _, s := range ro.op.TimeServerSpecs() {
			s.Layer = network.LayerOperator
			times.add(network.TimeServerID, s)
		}
	}

	c.mu.Unlock()

	name := c.Name()

	if err := syncOutputs(ctx, r, name, network.ConfigNamespace, network.LinkSpecType, map[string]network.LinkSpecSpec(links)); err != nil {
		return err
	}

	if err := syncOutputs(ctx, r, name, network.ConfigNamespace, network.AddressSpecType, map[string]network.AddressSpecSpec(addrs)); err != nil {
		return err
	}

	if err := syncOutputs(ctx, r, name, network.ConfigNamespace, network.RouteSpecType, map[string]network.RouteSpecSpec(routes)); err != nil {
		return err
	}

	if err := syncOutputs(ctx, r, name, network.ConfigNamespace, network.HostnameSpecType, map[string]network.HostnameSpecSpec(hosts)); err != nil {
		return err
	}

	if err := syncOutputs(ctx, r, name, network.ConfigNamespace, network.ResolverSpecType, map[string]network.ResolverSpecSpec(resolvers)); err != nil {
		return err
	}

	return syncOutputs(ctx, r, name, network.ConfigNamespace, network.TimeServerSpecType, map[string]network.TimeServerSpecSpec(times))
}
