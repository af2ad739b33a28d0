package network

import (
	"net/netip"
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	ResolverSpecType   = "ResolverSpecs.net.talos.dev"
	ResolverStatusType = "ResolverStatuses.net.talos.dev"
	ResolverID         = "resolvers"
)

// ResolverSpecSpec lists DNS servers and search domains.
type ResolverSpecSpec struct {
	DNSServers    []netip.Addr `yaml:"dnsServers" json:"dnsServers"`
	SearchDomains []string     `yaml:"searchDomains,omitempty" json:"searchDomains,omitempty"`
	Layer         ConfigLayer  `yaml:"layer" json:"layer"`
}

// DeepCopy copies the lists.
func (s ResolverSpecSpec) DeepCopy() ResolverSpecSpec {
	s.DNSServers, s.SearchDomains = slices.Clone(s.DNSServers), slices.Clone(s.SearchDomains)
	return s
}

func (s ResolverSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// ResolverSpec is a ResolverSpecs resource.
type ResolverSpec = bus.Typed[ResolverSpecSpec]

// ResolverStatusSpec is the resolver configuration in effect.
type ResolverStatusSpec struct {
	DNSServers    []netip.Addr `yaml:"dnsServers" json:"dnsServers"`
	SearchDomains []string     `yaml:"searchDomains,omitempty" json:"searchDomains,omitempty"`
}

// DeepCopy copies the lists.
func (s ResolverStatusSpec) DeepCopy() ResolverStatusSpec {
	s.DNSServers, s.SearchDomains = slices.Clone(s.DNSServers), slices.Clone(s.SearchDomains)
	return s
}

// ResolverStatus is a ResolverStatuses resource.
type ResolverStatus = bus.Typed[ResolverStatusSpec]
