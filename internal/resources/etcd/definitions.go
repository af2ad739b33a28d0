package etcd

import "github.com/talosbox/talosbox/internal/bus"

// Definitions are this package's types, for the registry behind
// `talosctl get`.
var Definitions = []bus.Definition{
	{Type: EtcdMemberType, DefaultNamespace: EtcdNamespace, Aliases: []string{"etcdmember", "em"},
		PrintColumns: []bus.PrintColumn{{Name: "MEMBER ID", JSONPath: "{.memberId}"}}},
	{Type: EtcdSpecType, DefaultNamespace: EtcdNamespace, Aliases: []string{"etcdspec", "es"},
		PrintColumns: []bus.PrintColumn{{Name: "NAME", JSONPath: "{.name}"}, {Name: "ADVERTISED", JSONPath: "{.advertisedAddresses}"}}},
}
