package k8s

import "github.com/talosbox/talosbox/internal/bus"

// NodeIPConfigSpec is how the node IP is chosen.
type NodeIPConfigSpec struct {
	ValidSubnets   []string `yaml:"validSubnets" json:"validSubnets"`
	ExcludeSubnets []string `yaml:"excludeSubnets" json:"excludeSubnets"`
}

// NodeIPConfigType is the type's name, as Talos has it.
const NodeIPConfigType = "NodeIPConfigs.kubernetes.talos.dev"

// NodeIPConfig is the resource type of a NodeIPConfigSpec.
type NodeIPConfig = bus.Typed[NodeIPConfigSpec]
