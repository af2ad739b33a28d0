package config

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	MachineTypeType = "MachineTypes.config.talos.dev"
	// MachineTypeID and IdentityID are Talos's singleton IDs.
	MachineTypeID = "machine-type"
)

// MachineTypeSpec is machine.type of the config in effect.
type MachineTypeSpec struct {
	MachineType string `yaml:"machineType"`
}

// MachineType is the resource type of the node's role.
type MachineType = bus.Typed[MachineTypeSpec]
