package k8s

import "github.com/talosbox/talosbox/internal/bus"

// KubePrismStatusType is the type's name, as Talos has it.
const KubePrismStatusType = "KubePrismStatuses.kubernetes.talos.dev"

// KubePrismStatusSpec says where KubePrism listens and whether an API
// server answered its last check.
type KubePrismStatusSpec struct {
	Host    string `yaml:"host" json:"host"`
	Healthy bool   `yaml:"healthy" json:"healthy"`
	Error   string `yaml:"error,omitempty" json:"error,omitempty"`
}

// KubePrismStatus is the resource type of a KubePrismStatusSpec.
type KubePrismStatus = bus.Typed[KubePrismStatusSpec]
