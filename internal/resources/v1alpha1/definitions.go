package v1alpha1

import (
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// Definitions are this package's types, for the registry behind
// `talosctl get`.
var Definitions = []bus.Definition{
	{
		Type:             ServiceType,
		DefaultNamespace: runtime.NamespaceRuntime,
		Aliases:          []string{"svc"},
		// Talos's columns; the state is in the spec and in `services`.
		PrintColumns: []bus.PrintColumn{
			{Name: "RUNNING", JSONPath: "{.running}"},
			{Name: "HEALTHY", JSONPath: "{.healthy}"},
			{Name: "HEALTH UNKNOWN", JSONPath: "{.unknown}"},
		},
	},
	{
		Type:             TimeStatusType,
		DefaultNamespace: runtime.NamespaceRuntime,
		Aliases:          []string{"timestatus"},
		PrintColumns: []bus.PrintColumn{
			{Name: "SYNCED", JSONPath: "{.synced}"},
			{Name: "EPOCH", JSONPath: "{.epoch}"},
		},
	},
	{Type: BootstrapStatusType, DefaultNamespace: runtime.NamespaceRuntime, Aliases: []string{"bootstrapstatus", "bs"},
		PrintColumns: []bus.PrintColumn{{Name: "SELF HOSTED", JSONPath: "{.selfHosted}"}}},
}
