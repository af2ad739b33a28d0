package cluster

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	IdentityType = "Identities.cluster.talos.dev"
	IdentityID   = "local"
)

// IdentitySpec is the node's stable identity.
type IdentitySpec struct {
	NodeID string `yaml:"nodeId"`
}

// Identity is the resource type of the node's identity.
type Identity = bus.Typed[IdentitySpec]
