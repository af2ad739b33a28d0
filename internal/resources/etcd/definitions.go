package etcd

import (
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// Definitions are the resource types a Plane publishes, with discovery's:
// machined registers them for `talosctl get`.
var Definitions = append([]bus.Definition{
	{Type: EtcdMemberType, DefaultNamespace: EtcdNamespace, Aliases: []string{"etcdmember", "em"},
		PrintColumns: []bus.PrintColumn{{Name: "MEMBER ID", JSONPath: "{.memberId}"}}},
	{Type: EtcdSpecType, DefaultNamespace: EtcdNamespace, Aliases: []string{"etcdspec", "es"},
		PrintColumns: []bus.PrintColumn{{Name: "NAME", JSONPath: "{.name}"}, {Name: "ADVERTISED", JSONPath: "{.advertisedAddresses}"}}},
}, cluster.Definitions...)
