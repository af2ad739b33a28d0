package k8s

import "github.com/talosbox/talosbox/internal/bus"

// The type's name, as Talos has it.
const (
	SecretsStatusType = "SecretStatuses.kubernetes.talos.dev"
	ConfigStatusType  = "ConfigStatuses.kubernetes.talos.dev"
)

// StatusSpec is SecretStatus and ConfigStatus: whether the files the
// static pods read are written, and their version.
type StatusSpec struct {
	Ready   bool   `yaml:"ready" json:"ready"`
	Version string `yaml:"version" json:"version"`
}

// Status is the resource type of a StatusSpec.
type Status = bus.Typed[StatusSpec]
