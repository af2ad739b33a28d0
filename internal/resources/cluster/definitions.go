package cluster

import "github.com/talosbox/talosbox/internal/bus"

// Definitions are this package's types, for the registry behind
// `talosctl get`.
var Definitions = []bus.Definition{
	{Type: AffiliateType, DefaultNamespace: Namespace, Aliases: []string{"affiliate"},
		PrintColumns: []bus.PrintColumn{{Name: "HOSTNAME", JSONPath: "{.hostname}"},
			{Name: "MACHINE TYPE", JSONPath: "{.machineType}"}, {Name: "ADDRESSES", JSONPath: "{.addresses}"}}},
	{Type: MemberType, DefaultNamespace: Namespace, Aliases: []string{"member"},
		PrintColumns: []bus.PrintColumn{{Name: "HOSTNAME", JSONPath: "{.hostname}"}, {Name: "MACHINE TYPE", JSONPath: "{.machineType}"},
			{Name: "OS", JSONPath: "{.operatingSystem}"}, {Name: "ADDRESSES", JSONPath: "{.addresses}"}}},
	{Type: IdentityType, DefaultNamespace: Namespace, Aliases: []string{"identity"},
		PrintColumns: []bus.PrintColumn{{Name: "ID", JSONPath: "{.nodeId}"}}},
}
