package machine

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
)

// Types Talos users query about the node itself: `get machinetype` answers
// scripts that branch on the node's role, `get identities` the node ID that
// discovery publishes.
const (
	MachineTypeType = "MachineTypes.config.talos.dev"
	IdentityType    = "Identities.cluster.talos.dev"

	// MachineTypeID and IdentityID are Talos's singleton IDs.
	MachineTypeID = "machine-type"
	IdentityID    = "local"

	namespaceCluster = "cluster"
)

// MachineTypeSpec is machine.type of the config in effect.
type MachineTypeSpec struct {
	MachineType string `yaml:"machineType"`
}

// MachineType is the resource type of the node's role.
type MachineType = bus.Typed[MachineTypeSpec]

// IdentitySpec is the node's stable identity.
type IdentitySpec struct {
	NodeID string `yaml:"nodeId"`
}

// Identity is the resource type of the node's identity.
type Identity = bus.Typed[IdentitySpec]

var identityDefinitions = []bus.Definition{
	{Type: MachineTypeType, DefaultNamespace: NamespaceConfig, Aliases: []string{"machinetype", "mt"},
		PrintColumns: []bus.PrintColumn{{Name: "TYPE", JSONPath: "{.machineType}"}}},
	{Type: IdentityType, DefaultNamespace: namespaceCluster, Aliases: []string{"identity"},
		PrintColumns: []bus.PrintColumn{{Name: "ID", JSONPath: "{.nodeId}"}}},
}

// MachineTypeController follows machine.type of the active config; before
// a config exists the node has no type, and the resource is absent.
type MachineTypeController struct{}

// Name implements bus.Controller.
func (*MachineTypeController) Name() string { return "config.MachineTypeController" }

// Inputs implements bus.Controller.
func (*MachineTypeController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: NamespaceConfig, Type: MachineConfigType}}
}

// Outputs implements bus.Controller.
func (*MachineTypeController) Outputs() []bus.Output {
	return []bus.Output{{Type: MachineTypeType}}
}

// Run implements bus.Controller.
func (*MachineTypeController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		mc, err := bus.GetAs[*MachineConfig](ctx, r, bus.Pointer{Namespace: NamespaceConfig, Type: MachineConfigType, ID: ActiveConfigID})
		if bus.IsNotFound(err) || (err == nil && (mc.TypedSpec().Config == nil || mc.TypedSpec().Config.Machine == nil)) {
			continue
		}

		if err != nil {
			return err
		}

		typ := mc.TypedSpec().Config.Machine.Type
		if _, err := bus.ModifyAs(ctx, r, bus.NewTyped(NamespaceConfig, MachineTypeType, MachineTypeID, MachineTypeSpec{}), func(mt *MachineType) error {
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
	return []bus.Output{{Type: IdentityType}}
}

// Run implements bus.Controller.
func (c *NodeIdentityController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	id, err := c.Identity()
	if err != nil {
		return err
	}

	if _, err := bus.ModifyAs(ctx, r, bus.NewTyped(namespaceCluster, IdentityType, IdentityID, IdentitySpec{}), func(i *Identity) error {
		i.TypedSpec().NodeID = id

		return nil
	}); err != nil {
		return err
	}

	<-ctx.Done()

	return nil
}
