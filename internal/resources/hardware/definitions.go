package hardware

import "github.com/talosbox/talosbox/internal/bus"

// Definitions are this package's types, for the registry behind
// `talosctl get`, with Talos's aliases and print columns (the column
// names upper case, as talosctl shows them). The registry adds the
// lower-case plural and singular ("memorymodule") and initials ("mm",
// "si") itself.
var Definitions = []bus.Definition{
	{Type: ProcessorType, DefaultNamespace: Namespace, Aliases: []string{"cpus", "cpu"},
		PrintColumns: []bus.PrintColumn{
			{Name: "MANUFACTURER", JSONPath: "{.manufacturer}"}, {Name: "MODEL", JSONPath: "{.productName}"},
			{Name: "CORES", JSONPath: "{.coreCount}"}, {Name: "THREADS", JSONPath: "{.threadCount}"},
		}},
	{Type: MemoryModuleType, DefaultNamespace: Namespace, Aliases: []string{"memorymodules", "ram"},
		PrintColumns: []bus.PrintColumn{
			{Name: "MANUFACTURER", JSONPath: "{.manufacturer}"}, {Name: "MODEL", JSONPath: "{.productName}"},
			{Name: "SIZEMIB", JSONPath: "{.sizeMiB}"},
		}},
	{Type: SystemInformationType, DefaultNamespace: Namespace, Aliases: []string{"systeminformation"},
		PrintColumns: []bus.PrintColumn{
			{Name: "MANUFACTURER", JSONPath: "{.manufacturer}"}, {Name: "PRODUCTNAME", JSONPath: "{.productName}"},
			{Name: "VERSION", JSONPath: "{.version}"}, {Name: "SERIALNUMBER", JSONPath: "{.serialnumber}"},
			{Name: "UUID", JSONPath: "{.uuid}"}, {Name: "WAKEUPTYPE", JSONPath: "{.wakeUpType}"},
			{Name: "SKUNUMBER", JSONPath: "{.skuNumber}"},
		}},
}
