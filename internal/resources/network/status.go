package network

import (
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	NetworkStatusType = "NetworkStatuses.net.talos.dev"
	NetworkStatusID   = "status"
)

// NetworkStatusSpec is the readiness of the network, as Talos reports it,
// plus the problems networkd could not resolve by itself.
type NetworkStatusSpec struct {
	AddressReady      bool `yaml:"addressReady" json:"addressReady"`
	ConnectivityReady bool `yaml:"connectivityReady" json:"connectivityReady"`
	HostnameReady     bool `yaml:"hostnameReady" json:"hostnameReady"`
	EtcFilesReady     bool `yaml:"etcFilesReady" json:"etcFilesReady"`
	// Issues are the ApplyIssues, "<id>: <message>", sorted.
	Issues []string `yaml:"issues,omitempty" json:"issues,omitempty"`
}

// DeepCopy copies the list.
func (s NetworkStatusSpec) DeepCopy() NetworkStatusSpec {
	s.Issues = slices.Clone(s.Issues)
	return s
}

// NetworkStatus is a NetworkStatuses resource.
type NetworkStatus = bus.Typed[NetworkStatusSpec]
