package runtime

import (
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	MachineStatusType = "MachineStatuses.runtime.talos.dev"
	// MachineID names the singleton runtime resources.
	MachineID = "machine"
)

// UnmetCondition is one reason the node is not ready.
type UnmetCondition struct {
	Name   string `yaml:"name"`
	Reason string `yaml:"reason"`
}

// MachineStatusSpec says where the node is and whether it is ready.
type MachineStatusSpec struct {
	Stage  Stage `yaml:"stage"`
	Status struct {
		Ready           bool             `yaml:"ready"`
		UnmetConditions []UnmetCondition `yaml:"unmetConditions,omitempty"`
	} `yaml:"status"`
}

// DeepCopy copies the conditions slice.
func (s MachineStatusSpec) DeepCopy() MachineStatusSpec {
	s.Status.UnmetConditions = slices.Clone(s.Status.UnmetConditions)
	return s
}

// MachineStatus is the resource type of the node's status.
type MachineStatus = bus.Typed[MachineStatusSpec]
