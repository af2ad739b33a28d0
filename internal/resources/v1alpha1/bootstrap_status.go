package v1alpha1

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	// BootstrapStatusType is Talos 0.9's; Talos 0.9's docs' `get bs` still asks
	// for it. A static-pod control plane is never self-hosted.
	BootstrapStatusType = "BootstrapStatuses.v1alpha1.talos.dev"
	BootstrapStatusID   = "control-plane"
)

// BootstrapStatusSpec is Talos 0.9's bootkube status.
type BootstrapStatusSpec struct {
	SelfHosted bool `yaml:"selfHosted" json:"selfHosted"`
}

// BootstrapStatus is the resource type of a BootstrapStatusSpec.
type BootstrapStatus = bus.Typed[BootstrapStatusSpec]
