package block

import (
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

var Definitions = []bus.Definition{
	{Type: DiskType, DefaultNamespace: runtime.NamespaceRuntime, Aliases: []string{"disk", "disks"},
		PrintColumns: []bus.PrintColumn{
			{Name: "SIZE", JSONPath: "{.pretty_size}"}, {Name: "READ ONLY", JSONPath: "{.readonly}"},
			{Name: "TRANSPORT", JSONPath: "{.transport}"}, {Name: "ROTATIONAL", JSONPath: "{.rotational}"},
			{Name: "WWID", JSONPath: "{.wwid}"}, {Name: "MODEL", JSONPath: "{.model}"}, {Name: "SERIAL", JSONPath: "{.serial}"},
		}},
	{Type: BlockDeviceType, DefaultNamespace: runtime.NamespaceRuntime, Aliases: []string{"blockdevice", "blockdevices"},
		PrintColumns: []bus.PrintColumn{{Name: "TYPE", JSONPath: "{.type}"}, {Name: "PARTITIONNAME", JSONPath: "{.partitionName}"}}},
	{Type: DiscoveredVolumeType, DefaultNamespace: runtime.NamespaceRuntime, Aliases: []string{"discoveredvolume", "discoveredvolumes", "dv"},
		PrintColumns: []bus.PrintColumn{
			{Name: "TYPE", JSONPath: "{.type}"}, {Name: "SIZE", JSONPath: "{.pretty_size}"}, {Name: "DISCOVERED", JSONPath: "{.name}"},
			{Name: "LABEL", JSONPath: "{.label}"}, {Name: "PARTITIONLABEL", JSONPath: "{.partition_label}"},
		}},
	{Type: SystemDiskType, DefaultNamespace: runtime.NamespaceRuntime, Aliases: []string{"systemdisk"},
		PrintColumns: []bus.PrintColumn{{Name: "DISK", JSONPath: "{.diskID}"}}},
	{Type: VolumeStatusType, DefaultNamespace: runtime.NamespaceRuntime,
		Aliases: []string{"volumestatus", "volumestatuses", "vs"},
		PrintColumns: []bus.PrintColumn{
			{Name: "TYPE", JSONPath: "{.type}"}, {Name: "PHASE", JSONPath: "{.phase}"},
			{Name: "LOCATION", JSONPath: "{.location}"}, {Name: "SIZE", JSONPath: "{.prettySize}"},
		}},
}
