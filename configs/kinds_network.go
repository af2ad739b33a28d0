package configs

// networkKinds are the document kinds of Talos's network family
// (pkg/machinery/config/types/network) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var networkKinds = []kindInfo{
	{kind: "HostnameConfig", new: func() Document { return &HostnameConfig{} }, live: true},
}
