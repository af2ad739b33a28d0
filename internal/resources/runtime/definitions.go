package runtime

import (
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/cri"
)

// Definitions of the types above, for the registry behind `talosctl get`.
var Definitions = []bus.Definition{
	{Type: config.MachineConfigType, DefaultNamespace: config.NamespaceConfig, Aliases: []string{"mc", "machineconfig"}, Sensitive: true},
	{Type: MachineStageType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"stage"}, NoInitials: true,
		PrintColumns: []bus.PrintColumn{{Name: "STAGE", JSONPath: "{.stage}"}}},
	{Type: MachineStatusType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"machinestatus"},
		PrintColumns: []bus.PrintColumn{{Name: "STAGE", JSONPath: "{.stage}"}, {Name: "READY", JSONPath: "{.status.ready}"}}},
	// Sensitive: a refused config is kept in the record, secrets and all.
	{Type: ConfigLoadErrorType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"configerror"}, Sensitive: true,
		PrintColumns: []bus.PrintColumn{{Name: "ERROR", JSONPath: "{.error}"}}},
	// Registry credentials are secrets.
	{Type: cri.RegistriesConfigType, DefaultNamespace: cri.NamespaceCRI, Aliases: []string{"registriesconfig", "registries"}, Sensitive: true},
}
