package network

import (
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	TimeServerSpecType   = "TimeServerSpecs.net.talos.dev"
	TimeServerStatusType = "TimeServerStatuses.net.talos.dev"
	TimeServerID         = "timeservers"
)

// TimeServerSpecSpec lists NTP servers.
type TimeServerSpecSpec struct {
	NTPServers []string    `yaml:"timeServers" json:"timeServers"`
	Layer      ConfigLayer `yaml:"layer" json:"layer"`
}

// DeepCopy copies the list.
func (s TimeServerSpecSpec) DeepCopy() TimeServerSpecSpec {
	s.NTPServers = slices.Clone(s.NTPServers)
	return s
}

func (s TimeServerSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// TimeServerSpec is a TimeServerSpecs resource.
type TimeServerSpec = bus.Typed[TimeServerSpecSpec]

// TimeServerStatusSpec is the NTP servers in effect (timed reads them).
type TimeServerStatusSpec struct {
	NTPServers []string `yaml:"timeServers" json:"timeServers"`
}

// DeepCopy copies the list.
func (s TimeServerStatusSpec) DeepCopy() TimeServerStatusSpec {
	s.NTPServers = slices.Clone(s.NTPServers)
	return s
}

// TimeServerStatus is a TimeServerStatuses resource.
type TimeServerStatus = bus.Typed[TimeServerStatusSpec]
