package configs

// criKinds are the document kinds of Talos's cri family
// (pkg/machinery/config/types/cri) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var criKinds = []kindInfo{
	{kind: "RegistryMirrorConfig", new: func() Document { return &RegistryMirrorConfig{} }, named: true, folded: true},
	{kind: "RegistryAuthConfig", new: func() Document { return &RegistryAuthConfig{} }, named: true, folded: true},
	{kind: "RegistryTLSConfig", new: func() Document { return &RegistryTLSConfig{} }, named: true, folded: true},
}
