package configs

// clusterKinds are the document kinds of Talos's cluster family
// (pkg/machinery/config/types/cluster) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var clusterKinds = []kindInfo{
	// Read by no node process yet (there is no discovery service client),
	// like cluster.discovery, which is live.
	{kind: "DiscoveryServiceConfig", new: func() Document { return &DiscoveryServiceConfig{} }, named: true, live: true},
	{kind: "DiscoveryIdentityConfig", new: func() Document { return &DiscoveryIdentityConfig{} }, folded: true},
}
