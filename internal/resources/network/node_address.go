package network

import (
	"net/netip"
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	NodeAddressType  = "NodeAddresses.net.talos.dev"
	NodeAddressesDef = "default"
	NodeAddressesCur = "current"
)

// NodeAddressSpec lists node addresses: "default" holds the one address the
// node is known by, "current" every global address it has.
type NodeAddressSpec struct {
	Addresses []netip.Prefix `yaml:"addresses" json:"addresses"`
}

// DeepCopy copies the list.
func (s NodeAddressSpec) DeepCopy() NodeAddressSpec {
	s.Addresses = slices.Clone(s.Addresses)
	return s
}

// NodeAddress is a NodeAddresses resource.
type NodeAddress = bus.Typed[NodeAddressSpec]
