package cluster

import (
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
)

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

var IdentityDefinitions = []bus.Definition{
	{Type: config.MachineTypeType, DefaultNamespace: config.NamespaceConfig, Aliases: []string{"machinetype", "mt"},
		PrintColumns: []bus.PrintColumn{{Name: "TYPE", JSONPath: "{.machineType}"}}},
	{Type: IdentityType, DefaultNamespace: Namespace, Aliases: []string{"identity"},
		PrintColumns: []bus.PrintColumn{{Name: "ID", JSONPath: "{.nodeId}"}}},
}
