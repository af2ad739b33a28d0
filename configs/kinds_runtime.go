package configs

// runtimeKinds are the document kinds of Talos's runtime family
// (pkg/machinery/config/types/runtime) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var runtimeKinds = []kindInfo{
	{kind: "SysctlConfig", new: func() Document { return &SysctlConfig{} }, folded: true},
	{kind: "SysfsConfig", new: func() Document { return &SysfsConfig{} }, folded: true},
	{kind: "KernelModuleConfig", new: func() Document { return &KernelModuleConfig{} }, named: true, folded: true},
	{kind: "EnvironmentConfig", new: func() Document { return &EnvironmentConfig{} }, folded: true},
	// Folded into machine.install but for its disk expression (residue),
	// which, like machine.install, applies live (it is read at install).
	{kind: "UnattendedInstallConfig", new: func() Document { return &UnattendedInstallConfig{} }, live: true},
	// Nothing to apply: workload isolation is refused where Talos has it.
	{kind: "SecurityProfileConfig", new: func() Document { return &SecurityProfileConfig{} }, live: true},
	// The kmsg, event sink and watchdog controllers follow the config.
	{kind: "KmsgLogConfig", new: func() Document { return &KmsgLogConfig{} }, named: true, live: true},
	{kind: "EventSinkConfig", new: func() Document { return &EventSinkConfig{} }, live: true},
	{kind: "WatchdogTimerConfig", new: func() Document { return &WatchdogTimerConfig{} }, live: true},
	// Refused: talosbox runs no extension services.
	{kind: "ExtensionServiceConfig", new: func() Document { return &ExtensionServiceConfig{} }, named: true},
}
