package k8s

import "github.com/talosbox/talosbox/internal/bus"

// NodeIPType is the type's name, as Talos has it.
const NodeIPType = "NodeIPs.kubernetes.talos.dev"

// NodeIPSpec is the chosen node IP (one per family).
type NodeIPSpec struct {
	Addresses []string `yaml:"addresses" json:"addresses"`
}

// NodeIP is the resource type of a NodeIPSpec.
type NodeIP = bus.Typed[NodeIPSpec]
