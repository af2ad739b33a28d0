package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
)

// NodeIPConfigSpec is how the node IP is chosen.
type NodeIPConfigSpec struct {
	ValidSubnets   []string `yaml:"validSubnets" json:"validSubnets"`
	ExcludeSubnets []string `yaml:"excludeSubnets" json:"excludeSubnets"`
}

const (
	NodeIPConfigType = "NodeIPConfigs.kubernetes.talos.dev"
)

type (
	NodeIPConfig = bus.Typed[NodeIPConfigSpec]
)
