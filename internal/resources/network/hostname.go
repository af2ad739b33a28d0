package network

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	HostnameSpecType   = "HostnameSpecs.net.talos.dev"
	HostnameStatusType = "HostnameStatuses.net.talos.dev"
	HostnameID         = "hostname"
)

// HostnameSpecSpec is the wanted hostname.
type HostnameSpecSpec struct {
	Hostname   string      `yaml:"hostname" json:"hostname"`
	Domainname string      `yaml:"domainname,omitempty" json:"domainname,omitempty"`
	Layer      ConfigLayer `yaml:"layer" json:"layer"`
}

func (s HostnameSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// FQDN is hostname.domainname, or the hostname alone.
func (s HostnameSpecSpec) FQDN() string {
	if s.Domainname == "" {
		return s.Hostname
	}

	return s.Hostname + "." + s.Domainname
}

// HostnameSpec is a HostnameSpecs resource.
type HostnameSpec = bus.Typed[HostnameSpecSpec]

// HostnameStatusSpec is the hostname in effect.
type HostnameStatusSpec struct {
	Hostname   string `yaml:"hostname" json:"hostname"`
	Domainname string `yaml:"domainname,omitempty" json:"domainname,omitempty"`
}

// FQDN is hostname.domainname, or the hostname alone.
func (s HostnameStatusSpec) FQDN() string {
	return HostnameSpecSpec{Hostname: s.Hostname, Domainname: s.Domainname}.FQDN()
}

// HostnameStatus is a HostnameStatuses resource.
type HostnameStatus = bus.Typed[HostnameStatusSpec]
