package network

import "github.com/talosbox/talosbox/internal/bus"

// EtcFileStatusType is the type's name, as Talos has it.
const EtcFileStatusType = "EtcFileStatuses.net.talos.dev"

// EtcFileStatusSpec is a rendered /etc file (hosts, resolv.conf).
type EtcFileStatusSpec struct {
	Path string `yaml:"path" json:"path"`
	// Contents is what was written, so a reader needs no file access.
	Contents string `yaml:"contents" json:"contents"`
}

// EtcFileStatus is an EtcFileStatuses resource.
type EtcFileStatus = bus.Typed[EtcFileStatusSpec]
