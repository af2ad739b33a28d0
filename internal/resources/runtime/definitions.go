package runtime

import "github.com/talosbox/talosbox/internal/bus"

// Definitions are this package's types, for the registry behind
// `talosctl get`.
var Definitions = []bus.Definition{
	{Type: MachineStageType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"stage"}, NoInitials: true,
		PrintColumns: []bus.PrintColumn{{Name: "STAGE", JSONPath: "{.stage}"}}},
	{Type: MachineStatusType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"machinestatus"},
		PrintColumns: []bus.PrintColumn{{Name: "STAGE", JSONPath: "{.stage}"}, {Name: "READY", JSONPath: "{.status.ready}"}}},
	// Sensitive: a refused config is kept in the record, secrets and all.
	{Type: ConfigLoadErrorType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"configerror"}, Sensitive: true,
		PrintColumns: []bus.PrintColumn{{Name: "ERROR", JSONPath: "{.error}"}}},
	{Type: MetaKeyType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"meta"},
		PrintColumns: []bus.PrintColumn{{Name: "VALUE", JSONPath: "{.value}"}},
		// Only the secret tags are masked (RedactedYAML); the rest reads as is.
		Sensitive: true},
	{Type: ExtensionStatusType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"extensions"},
		PrintColumns: []bus.PrintColumn{{Name: "NAME", JSONPath: "{.metadata.name}"}, {Name: "VERSION", JSONPath: "{.metadata.version}"}}},
	{Type: SecurityStateType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"securitystate"},
		PrintColumns: []bus.PrintColumn{{Name: "SECUREBOOT", JSONPath: "{.secureBoot}"},
			{Name: "UKISIGNINGKEYFINGERPRINT", JSONPath: "{.ukiSigningKeyFingerprint}"}, {Name: "PCRSIGNINGKEYFINGERPRINT", JSONPath: "{.pcrSigningKeyFingerprint}"},
			{Name: "SELINUXSTATE", JSONPath: "{.selinuxState}"}, {Name: "MODULESIGNATUREENFORCED", JSONPath: "{.moduleSignatureEnforced}"}}},
	{Type: WatchdogTimerStatusType, DefaultNamespace: NamespaceRuntime,
		PrintColumns: []bus.PrintColumn{{Name: "DEVICE", JSONPath: "{.device}"}, {Name: "TIMEOUT", JSONPath: "{.timeout}"}}},
}
