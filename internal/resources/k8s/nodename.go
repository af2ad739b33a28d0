package k8s

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	NodenameType = "Nodenames.kubernetes.talos.dev"
	NodenameID   = "nodename"
)

// NodenameSpec is the name the node registers with.
type NodenameSpec struct {
	Nodename         string `yaml:"nodename" json:"nodename"`
	HostnameVersion  string `yaml:"hostnameVersion,omitempty" json:"hostnameVersion,omitempty"`
	SkipNodeRegistry bool   `yaml:"skipNodeRegistration,omitempty" json:"skipNodeRegistration,omitempty"`
}

// Nodename is the resource type of a NodenameSpec.
type Nodename = bus.Typed[NodenameSpec]
