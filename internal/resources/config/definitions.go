package config

import "github.com/talosbox/talosbox/internal/bus"

// Definitions are this package's types, for the registry behind
// `talosctl get`.
var Definitions = []bus.Definition{
	{Type: MachineConfigType, DefaultNamespace: NamespaceConfig, Aliases: []string{"mc", "machineconfig"}, Sensitive: true},
	{Type: MachineTypeType, DefaultNamespace: NamespaceConfig, Aliases: []string{"machinetype", "mt"},
		PrintColumns: []bus.PrintColumn{{Name: "TYPE", JSONPath: "{.machineType}"}}},
}
