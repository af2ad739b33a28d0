package discovery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
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
//
// A registry that is also a Watcher is watched: a change anywhere in the
// cluster reaches Members as soon as the registry tells of it. The
// periodic publish stays, since it refreshes this node's lease, and its
// list stands in for the watch while the watch is down.
type Controller struct {
	// Registry is the registry for the active config (nil: none yet).
	Registry func(cfg *configs.Config) Registry
	// RegistryChanged, when set, is a channel closed when Registry may
	// answer differently although no input changed (the control plane's
	// etcd member started or stopped), so the switch waits for no tick.
	RegistryChanged func() <-chan struct{}
	// NodeID is the node's identity (machine.Node.Identity).
	NodeID func() (string, error)
	// Interval is DefaultInterval when zero.
	Interval time.Duration
	// OnList, when set, receives every node known after each refresh
	// (this one first): the control plane's addresses feed trustd and
	// etcd join endpoints.
	OnList func([]cluster.AffiliateSpec)

	// last is the registry's last known list, kept through a failed
	// refresh so a control-plane restart does not empty the list.
	last []cluster.AffiliateSpec
	// reg is the registry of the last refresh; a new one is published to
	// at once.
	reg Registry
	// watch follows reg when it is a Watcher (nil otherwise).
	watch *follower
	// changed is signalled by the watch when it has a new list.
	changed chan struct{}
}

func (c *Controller) Name() string { return "cluster.DiscoveryController" }

func (c *Controller) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID},
		{Namespace: networkres.Namespace, Type: networkres.NodeAddressType},
	}
}

func (c *Controller) Outputs() []bus.Output {
	return []bus.Output{{Type: cluster.AffiliateType}, {Type: cluster.MemberType}}
}

func (c *Controller) Run(ctx context.Context, r bus.ControllerRuntime) error {
	interval := c.Interval
	if interval == 0 {
		interval = DefaultInterval
	}

	tick := time.NewTicker(interval)
	defer tick.Stop()

	// A restarted Run starts from scratch: the watch of the last run
	// ended with it.
	c.reg, c.watch, c.changed = nil, nil, make(chan struct{}, 1)
	defer func() { c.watch.stop() }()

	publish := true

	for {
		// Taken before the refresh, so a change during it is not missed.
		var regChanged <-chan struct{}
		if c.RegistryChanged != nil {
			regChanged = c.RegistryChanged()
		}

		if err := c.reconcile(ctx, r, publish); err != nil {
			return err
		}

		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
			// The config or the addresses changed: the record with them.
			publish = true
		case <-tick.C:
			publish = true
		case <-regChanged:
			publish = true
		case <-c.changed:
			// Someone else's record changed: ours did not, and publishing
			// would only wake every node's watch again.
			publish = false
		}
	}
}

// reconcile refreshes the outputs, publishing this node's record first
// when publish is set.
func (c *Controller) reconcile(ctx context.Context, r bus.ControllerRuntime, publish bool) error {
	cfg, err := c.config(ctx, r)
	if err != nil {
		return err
	}

	if cfg == nil || cfg.Machine == nil {
		// Maintenance mode: no cluster to belong to.
		c.setRegistry(ctx, nil, r)
		return c.sync(ctx, r, nil)
	}

	self, err := c.local(ctx, r, cfg)
	if err != nil {
		return err
	}

	reg := c.Registry(cfg)
	if c.setRegistry(ctx, reg, r) {
		publish = true
	}

	watched, live := c.watch.latest()

	// Our record went missing (its lease ran out while the registry was
	// away, or someone deleted it): put it back now, not a tick later.
	// Only missing: a record that differs may be a clone with our node ID,
	// and answering each other's records would never end.
	if live && !slices.ContainsFunc(watched, func(a cluster.AffiliateSpec) bool { return a.NodeID == self.NodeID }) {
		publish = true
	}

	if reg != nil && publish {
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		list, err := publishAndList(callCtx, reg, self, !live)

		cancel()

		switch {
		case err != nil:
			r.Logger().Debug("discovery registry unavailable", "error", err)
		case !live:
			c.last = list
		}
	}

	// While it is up, the watch knows better than a list read before it.
	if list, live := c.watch.latest(); live {
		c.last = list
	}

	all := []cluster.AffiliateSpec{self}

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

// setRegistry makes reg the registry, restarting the watch when it is a
// new one, and says whether it is.
func (c *Controller) setRegistry(ctx context.Context, reg Registry, r bus.ControllerRuntime) bool {
	if sameRegistry(reg, c.reg) {
		return false
	}

	c.watch.stop()
	c.reg, c.watch = reg, nil

	if w, ok := reg.(Watcher); ok {
		c.watch = follow(ctx, reg, w, c.notify, r.Logger())
	}

	return true
}

// notify wakes Run for the watch's new list; a wake-up already pending
// will read it.
func (c *Controller) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// publishAndList publishes self, then lists unless the watch does.
func publishAndList(ctx context.Context, reg Registry, self cluster.AffiliateSpec, list bool) ([]cluster.AffiliateSpec, error) {
	if err := reg.Publish(ctx, self); err != nil {
		return nil, fmt.Errorf("discovery: publish: %w", err)
	}

	if !list {
		return nil, nil
	}

	out, err := reg.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovery: list: %w", err)
	}

	return out, nil
}

func (c *Controller) config(ctx context.Context, r bus.ControllerRuntime) (*configs.Config, error) {
	res, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
	if bus.IsNotFound(err) {
		return nil, nil
	}

	if err != nil {
		return nil, err
	}

	return res.TypedSpec().Config, nil
}

// local is this node's record, from its config and current addresses.
func (c *Controller) local(ctx context.Context, r bus.ControllerRuntime, cfg *configs.Config) (cluster.AffiliateSpec, error) {
	id, err := c.NodeID()
	if err != nil {
		return cluster.AffiliateSpec{}, fmt.Errorf("discovery: node identity: %w", err)
	}

	host := machine.Hostname(cfg)
	a := cluster.AffiliateSpec{NodeID: id, Hostname: host, Nodename: host, MachineType: configs.MachineTypeOf(cfg.Machine.Type), OperatingSystem: OperatingSystem()}
	if cfg.IsControlPlane() {
		a.ControlPlane = &cluster.ControlPlane{APIServerPort: cfg.LocalAPIServerPort()}
	}

	res, err := bus.GetAs[*networkres.NodeAddress](ctx, r, bus.Pointer{Namespace: networkres.Namespace, Type: networkres.NodeAddressType, ID: networkres.NodeAddressesCur})
	if err != nil && !bus.IsNotFound(err) {
		return cluster.AffiliateSpec{}, err
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

	if len(a.Addresses) > cluster.MaxAddresses {
		a.Addresses = a.Addresses[:cluster.MaxAddresses]
	}

	return a, nil
}

// OperatingSystem is what a member shows as its OS.
func OperatingSystem() string { return "talosbox (" + version.Tag + ")" }

// sync writes the Affiliates and Members for all.
func (c *Controller) sync(ctx context.Context, r bus.ControllerRuntime, all []cluster.AffiliateSpec) error {
	affiliates := map[string]cluster.AffiliateSpec{}
	members := map[string]cluster.MemberSpec{}

	for _, a := range all {
		affiliates[a.NodeID] = a
		members[a.MemberID()] = a.Member()
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), cluster.Namespace, cluster.AffiliateType, affiliates); err != nil {
		return err
	}

	return bus.SyncOutputs(ctx, r, c.Name(), cluster.Namespace, cluster.MemberType, members)
}
