package network

import "github.com/talosbox/talosbox/internal/bus"

// The platform's network config as a resource: what networkd's config
// controllers layer at LayerPlatform. It may change after boot (NoCloud's
// seed fetched over the network once DHCP is up).
const (
	PlatformConfigType = "PlatformConfigs.net.talos.dev"
	PlatformConfigID   = "platform"
)

// PlatformConfig is a PlatformConfigs resource.
type PlatformConfig = bus.Typed[PlatformConfigSpec]

// PlatformConfigSpec is the network config a platform hands the node
// (NoCloud's network-config and meta-data; Talos's PlatformNetworkConfig):
// networkd adds each spec at LayerPlatform, above the cmdline's and below
// the machine config's, as Talos layers them. Links are named as the
// kernel names them: a platform that matches by MAC address resolves it
// first.
type PlatformConfigSpec struct {
	Links     []LinkSpecSpec     `yaml:"links,omitempty" json:"links,omitempty"`
	Addresses []AddressSpecSpec  `yaml:"addresses,omitempty" json:"addresses,omitempty"`
	Routes    []RouteSpecSpec    `yaml:"routes,omitempty" json:"routes,omitempty"`
	Hostnames []HostnameSpecSpec `yaml:"hostnames,omitempty" json:"hostnames,omitempty"`
	Resolvers []ResolverSpecSpec `yaml:"resolvers,omitempty" json:"resolvers,omitempty"`
	Operators []OperatorSpecSpec `yaml:"operators,omitempty" json:"operators,omitempty"`
}

// IsEmpty says the platform configures nothing.
func (s *PlatformConfigSpec) IsEmpty() bool {
	return s == nil || len(s.Links)+len(s.Addresses)+len(s.Routes)+len(s.Hostnames)+len(s.Resolvers)+len(s.Operators) == 0
}
