package configs

// runtimeKinds are the document kinds of Talos's runtime family
// (pkg/machinery/config/types/runtime) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var runtimeKinds = []kindInfo{
	// The kmsg, event sink and watchdog controllers follow the config.
	{kind: "KmsgLogConfig", new: func() Document { return &KmsgLogConfig{} }, named: true, live: true},
	{kind: "EventSinkConfig", new: func() Document { return &EventSinkConfig{} }, live: true},
	{kind: "WatchdogTimerConfig", new: func() Document { return &WatchdogTimerConfig{} }, live: true},
	// Refused: talosbox runs no extension services.
	{kind: "ExtensionServiceConfig", new: func() Document { return &ExtensionServiceConfig{} }, named: true},
}
