package configs

// networkKinds are the document kinds of Talos's network family
// (pkg/machinery/config/types/network) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
//
// Kinds networkd also reads from the document (a link that is down, a
// route's table, a DHCP client identifier, a shared IP) are not folded:
// their changes are compared as documents too, and apply live as
// machine.network's do.
var networkKinds = []kindInfo{
	{kind: "HostnameConfig", new: func() Document { return &HostnameConfig{} }, live: true},
	{kind: "ResolverConfig", new: func() Document { return &ResolverConfig{} }, folded: true},
	{kind: "TimeSyncConfig", new: func() Document { return &TimeSyncConfig{} }, folded: true},
	{kind: "StaticHostConfig", new: func() Document { return &StaticHostConfig{} }, named: true, folded: true},
	{kind: "KubeSpanConfig", new: func() Document { return &KubeSpanConfig{} }, folded: true},
	{kind: "LinkConfig", new: func() Document { return &LinkConfig{} }, named: true, live: true},
	{kind: "BondConfig", new: func() Document { return &BondConfig{} }, named: true, live: true},
	{kind: "BridgeConfig", new: func() Document { return &BridgeConfig{} }, named: true, live: true},
	{kind: "DummyLinkConfig", new: func() Document { return &DummyLinkConfig{} }, named: true, live: true},
	{kind: "VLANConfig", new: func() Document { return &VLANConfig{} }, named: true, live: true},
	{kind: "WireguardConfig", new: func() Document { return &WireguardConfig{} }, named: true, live: true},
	{kind: "DHCPv4Config", new: func() Document { return &DHCPv4Config{} }, named: true, live: true},
	{kind: "Layer2VIPConfig", new: func() Document { return &Layer2VIPConfig{} }, named: true, live: true},
	// The ingress firewall: read by networkd from the documents.
	{kind: "NetworkDefaultActionConfig", new: func() Document { return &NetworkDefaultActionConfig{} }, live: true},
	{kind: "NetworkRuleConfig", new: func() Document { return &NetworkRuleConfig{} }, named: true, live: true},
	// Refused by check (talosbox cannot honour them yet); they decode and
	// patch like the others.
	{kind: "DHCPv6Config", new: func() Document { return &DHCPv6Config{} }, named: true},
	{kind: "LinkAliasConfig", new: func() Document { return &LinkAliasConfig{} }, named: true},
	{kind: "EthernetConfig", new: func() Document { return &EthernetConfig{} }, named: true},
}
