package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
)

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

type (
	Nodename = bus.Typed[NodenameSpec]
)
