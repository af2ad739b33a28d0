package configs

// securityKinds are the document kinds of Talos's security family
// (pkg/machinery/config/types/security) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var securityKinds = []kindInfo{
	// The CA bundle is read by the processes that use it when they start.
	{kind: "TrustedRootsConfig", new: func() Document { return &TrustedRootsConfig{} }, named: true},
}
