package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
)

const (
	NodeIPType = "NodeIPs.kubernetes.talos.dev"
)

// NodeIPSpec is the chosen node IP (one per family).
type NodeIPSpec struct {
	Addresses []string `yaml:"addresses" json:"addresses"`
}

type (
	NodeIP = bus.Typed[NodeIPSpec]
)
