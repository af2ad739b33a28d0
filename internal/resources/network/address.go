package network

import (
	"net/netip"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name, as Talos has it.
const (
	AddressSpecType   = "AddressSpecs.net.talos.dev"
	AddressStatusType = "AddressStatuses.net.talos.dev"
)

// Address families as Talos prints them.
const (
	FamilyInet4 = "inet4"
	FamilyInet6 = "inet6"
)

// FamilyOf is a's family as Talos prints it; an IPv4-mapped address is
// IPv4.
func FamilyOf(a netip.Addr) string {
	if a.Is4() || a.Is4In6() {
		return FamilyInet4
	}

	return FamilyInet6
}

// AddressSpecSpec is an address networkd keeps on a link.
type AddressSpecSpec struct {
	Address  netip.Prefix `yaml:"address" json:"address"`
	LinkName string       `yaml:"linkName" json:"linkName"`
	Family   string       `yaml:"family" json:"family"`
	Layer    ConfigLayer  `yaml:"layer" json:"layer"`
}

func (s AddressSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// ID is the Talos ID: "eth0/10.0.0.2/24".
func (s AddressSpecSpec) ID() string { return AddressID(s.LinkName, s.Address) }

// AddressID is "<link>/<address>/<prefix length>".
func AddressID(link string, p netip.Prefix) string { return link + "/" + p.String() }

// AddressSpec is an AddressSpecs resource.
type AddressSpec = bus.Typed[AddressSpecSpec]

// AddressStatusSpec is an address as the kernel reports it.
type AddressStatusSpec struct {
	Address   netip.Prefix `yaml:"address" json:"address"`
	Local     netip.Addr   `yaml:"local,omitempty" json:"local,omitempty"`
	Broadcast netip.Addr   `yaml:"broadcast,omitempty" json:"broadcast,omitempty"`
	LinkIndex int          `yaml:"linkIndex" json:"linkIndex"`
	LinkName  string       `yaml:"linkName" json:"linkName"`
	Family    string       `yaml:"family" json:"family"`
	Scope     string       `yaml:"scope" json:"scope"`
	Flags     int          `yaml:"flags" json:"flags"`
}

// AddressStatus is an AddressStatuses resource.
type AddressStatus = bus.Typed[AddressStatusSpec]
