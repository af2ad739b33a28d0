package discovery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/version"
)

// Timing of the controller.
const (
	// DefaultInterval is how often a node republishes and refreshes.
	DefaultInterval = 10 * time.Second
	callTimeout     = 5 * time.Second
)

// Controller publishes this node's affiliate record and turns the
// registry's list into Affiliates and Members. The local record is always
// there, so a node cut off from the registry still lists itself.
type Controller struct {
	// Registry is the registry for the active config (nil: none yet).
	Registry func(cfg *configs.Config) Registry
	// NodeID is the node's identity (machine.Node.Identity).
	NodeID func() (string, error)
	// Interval is DefaultInterval when zero.
	Interval time.Duration
	// OnList, when set, receives every node known after each refresh
	// (this one first): the control plane's addresses feed trustd and
	// etcd join endpoints.
	OnList func([]AffiliateSpec)

	// last is the registry's last successful answer, kept through a
	// failed refresh so a control-plane restart does not empty the list.
	last []AffiliateSpec
}

func (c *Controller) Name() string { return "cluster.DiscoveryController" }

func (c *Controller) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: machine.NamespaceConfig, Type: machine.MachineConfigType, ID: machine.ActiveConfigID},
		{Namespace: network.Namespace, Type: network.NodeAddressType},
	}
}

func (c *Controller) Outputs() []bus.Output {
	return []bus.Output{{Type: AffiliateType}, {Type: MemberType}}
}

func (c *Controller) Run(ctx context.Context, r bus.ControllerRuntime) error {
	interval := c.Interval
	if interval == 0 {
		interval = DefaultInterval
	}

	tick := time.NewTicker(interval)
	defer tick.Stop()

	for {
		if err := c.reconcile(ctx, r); err != nil {
			return err
		}

		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-tick.C:
		}
	}
}

func (c *Controller) reconcile(ctx context.Context, r bus.ControllerRuntime) error {
	cfg, err := c.config(ctx, r)
	if err != nil {
		return err
	}

	if cfg == nil || cfg.Machine == nil {
		// Maintenance mode: no cluster to belong to.
		return c.sync(ctx, r, nil)
	}

	self, err := c.local(ctx, r, cfg)
	if err != nil {
		return err
	}

	all := []AffiliateSpec{self}

	if reg := c.Registry(cfg); reg != nil {
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		list, err := publishAndList(callCtx, reg, self)

		cancel()

		if err != nil {
			r.Logger().Debug("discovery registry unavailable", "error", err)
		} else {
			c.last = list
		}
	}

	for _, a := range c.last {
		if a.NodeID != self.NodeID {
			all = append(all, a)
		}
	}

	if c.OnList != nil {
		c.OnList(slices.Clone(all))
	}

	return c.sync(ctx, r, all)
}

func publishAndList(ctx context.Context, reg Registry, self AffiliateSpec) ([]AffiliateSpec, error) {
	if err := reg.Publish(ctx, self); err != nil {
		return nil, err
	}

	return reg.List(ctx)
}

func (c *Controller) config(ctx context.Context, r bus.ControllerRuntime) (*configs.Config, error) {
	res, err := bus.GetAs[*machine.MachineConfig](ctx, r, bus.Pointer{Namespace: machine.NamespaceConfig, Type: machine.MachineConfigType, ID: machine.ActiveConfigID})
	if bus.IsNotFound(err) {
		return nil, nil
	}

	if err != nil {
		return nil, err
	}

	return res.TypedSpec().Config, nil
}

// local is this node's record, from its config and current addresses.
func (c *Controller) local(ctx context.Context, r bus.ControllerRuntime, cfg *configs.Config) (AffiliateSpec, error) {
	id, err := c.NodeID()
	if err != nil {
		return AffiliateSpec{}, fmt.Errorf("discovery: node identity: %w", err)
	}

	host := machine.Hostname(cfg)
	a := AffiliateSpec{NodeID: id, Hostname: host, Nodename: host, MachineType: cfg.Machine.Type, OperatingSystem: OperatingSystem()}

	res, err := bus.GetAs[*network.NodeAddress](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.NodeAddressType, ID: network.NodeAddressesCur})
	if err != nil && !bus.IsNotFound(err) {
		return AffiliateSpec{}, err
	}

	if err == nil {
		for _, p := range res.TypedSpec().Addresses {
			// A host address is a shared IP: it belongs to whoever holds
			// it now, not to this node.
			if p.Bits() < p.Addr().BitLen() && !slices.Contains(a.Addresses, p.Addr()) {
				a.Addresses = append(a.Addresses, p.Addr())
			}
		}
	}

	if len(a.Addresses) > maxAddresses {
		a.Addresses = a.Addresses[:maxAddresses]
	}

	return a, nil
}

// OperatingSystem is what a member shows as its OS.
func OperatingSystem() string { return "talosbox (" + version.Tag + ")" }

// sync writes the Affiliates and Members for all.
func (c *Controller) sync(ctx context.Context, r bus.ControllerRuntime, all []AffiliateSpec) error {
	affiliates := map[string]AffiliateSpec{}
	members := map[string]MemberSpec{}

	for _, a := range all {
		affiliates[a.NodeID] = a
		members[a.MemberID()] = a.Member()
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), Namespace, AffiliateType, affiliates); err != nil {
		return err
	}

	return bus.SyncOutputs(ctx, r, c.Name(), Namespace, MemberType, members)
}
