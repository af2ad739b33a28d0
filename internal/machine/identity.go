package machine

import (
	"context"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// MachineTypeController follows machine.type of the active config; before
// a config exists the node has no type, and the resource is absent.
type MachineTypeController struct{}

// Name implements bus.Controller.
func (*MachineTypeController) Name() string { return "config.MachineTypeController" }

// Inputs implements bus.Controller.
func (*MachineTypeController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: config.NamespaceConfig, Type: config.MachineConfigType}}
}

// Outputs implements bus.Controller.
func (*MachineTypeController) Outputs() []bus.Output {
	return []bus.Output{{Type: config.MachineTypeType}}
}

// Run implements bus.Controller.
func (*MachineTypeController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
		if bus.IsNotFound(err) || (err == nil && (mc.TypedSpec().Config == nil || mc.TypedSpec().Config.Machine == nil)) {
			continue
		}

		if err != nil {
			return err
		}

		// As in Talos, the resource holds the type the config means
		// ("join" is a worker).
		typ := configs.MachineTypeOf(mc.TypedSpec().Config.Machine.Type)
		if _, err := bus.ModifyAs(ctx, r, bus.NewTyped(config.NamespaceConfig, config.MachineTypeType, config.MachineTypeID, config.MachineTypeSpec{}), func(mt *config.MachineType) error {
			mt.TypedSpec().MachineType = typ

			return nil
		}); err != nil {
			return err
		}
	}
}

// NodeIdentityController publishes the identity kept on STATE.
type NodeIdentityController struct {
	Identity func() (string, error)
}

// Name implements bus.Controller.
func (*NodeIdentityController) Name() string { return "cluster.NodeIdentityController" }

// Inputs implements bus.Controller.
func (*NodeIdentityController) Inputs() []bus.Input { return nil }

// Outputs implements bus.Controller.
func (*NodeIdentityController) Outputs() []bus.Output {
	return []bus.Output{{Type: cluster.IdentityType}}
}

// Run implements bus.Controller.
func (c *NodeIdentityController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	id, err := c.Identity()
	if err != nil {
		return err
	}

	if _, err := bus.ModifyAs(ctx, r, bus.NewTyped(cluster.Namespace, cluster.IdentityType, cluster.IdentityID, cluster.IdentitySpec{}), func(i *cluster.Identity) error {
		i.TypedSpec().NodeID = id

		return nil
	}); err != nil {
		return err
	}

	<-ctx.Done()

	return nil
}
