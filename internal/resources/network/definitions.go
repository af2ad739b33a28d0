package network

import "github.com/talosbox/talosbox/internal/bus"

// Definitions of every network type, for the registry behind talosctl get;
// machined registers them next to its own.
var Definitions = []bus.Definition{
	// Link specs may carry a WireGuard private key.
	{Type: LinkSpecType, DefaultNamespace: Namespace, Sensitive: true,
		PrintColumns: []bus.PrintColumn{{Name: "KIND", JSONPath: "{.kind}"}, {Name: "UP", JSONPath: "{.up}"}, {Name: "MTU", JSONPath: "{.mtu}"}}},
	{Type: LinkStatusType, DefaultNamespace: Namespace, Aliases: []string{"link", "links"},
		PrintColumns: []bus.PrintColumn{{Name: "TYPE", JSONPath: "{.type}"}, {Name: "KIND", JSONPath: "{.kind}"},
			{Name: "HW ADDR", JSONPath: "{.hardwareAddr}"}, {Name: "OPER STATE", JSONPath: "{.operationalState}"}, {Name: "LINK STATE", JSONPath: "{.linkState}"}}},
	{Type: AddressSpecType, DefaultNamespace: Namespace,
		PrintColumns: []bus.PrintColumn{{Name: "ADDRESS", JSONPath: "{.address}"}, {Name: "LINK", JSONPath: "{.linkName}"}}},
	{Type: AddressStatusType, DefaultNamespace: Namespace, Aliases: []string{"address", "addresses"},
		PrintColumns: []bus.PrintColumn{{Name: "ADDRESS", JSONPath: "{.address}"}, {Name: "LINK", JSONPath: "{.linkName}"}}},
	// Routes print as Talos's RouteStatuses (Talos gives RouteSpecs no
	// columns; they get the same ones here).
	{Type: RouteSpecType, DefaultNamespace: Namespace, PrintColumns: routeColumns},
	{Type: RouteStatusType, DefaultNamespace: Namespace, Aliases: []string{"route", "routes"}, PrintColumns: routeColumns},
	{Type: HostnameSpecType, DefaultNamespace: Namespace,
		PrintColumns: []bus.PrintColumn{{Name: "HOSTNAME", JSONPath: "{.hostname}"}, {Name: "DOMAINNAME", JSONPath: "{.domainname}"}}},
	{Type: HostnameStatusType, DefaultNamespace: Namespace, Aliases: []string{"hostname"},
		PrintColumns: []bus.PrintColumn{{Name: "HOSTNAME", JSONPath: "{.hostname}"}, {Name: "DOMAINNAME", JSONPath: "{.domainname}"}}},
	{Type: ResolverSpecType, DefaultNamespace: Namespace,
		PrintColumns: []bus.PrintColumn{{Name: "RESOLVERS", JSONPath: "{.dnsServers}"}}},
	{Type: ResolverStatusType, DefaultNamespace: Namespace, Aliases: []string{"resolvers"},
		PrintColumns: []bus.PrintColumn{{Name: "RESOLVERS", JSONPath: "{.dnsServers}"}}},
	{Type: TimeServerSpecType, DefaultNamespace: Namespace,
		PrintColumns: []bus.PrintColumn{{Name: "TIMESERVERS", JSONPath: "{.timeServers}"}}},
	{Type: TimeServerStatusType, DefaultNamespace: Namespace, Aliases: []string{"timeservers"},
		PrintColumns: []bus.PrintColumn{{Name: "TIMESERVERS", JSONPath: "{.timeServers}"}}},
	{Type: NodeAddressType, DefaultNamespace: Namespace, Aliases: []string{"nodeaddresses"},
		PrintColumns: []bus.PrintColumn{{Name: "ADDRESSES", JSONPath: "{.addresses}"}}},
	{Type: OperatorSpecType, DefaultNamespace: Namespace, Aliases: []string{"operators"},
		PrintColumns: []bus.PrintColumn{{Name: "OPERATOR", JSONPath: "{.operator}"}, {Name: "LINK", JSONPath: "{.linkName}"}}},
	{Type: NetworkStatusType, DefaultNamespace: Namespace, Aliases: []string{"netstatus"},
		PrintColumns: []bus.PrintColumn{{Name: "ADDRESS", JSONPath: "{.addressReady}"}, {Name: "CONNECTIVITY", JSONPath: "{.connectivityReady}"},
			{Name: "HOSTNAME", JSONPath: "{.hostnameReady}"}, {Name: "ETC", JSONPath: "{.etcFilesReady}"}}},
	{Type: EtcFileStatusType, DefaultNamespace: Namespace,
		PrintColumns: []bus.PrintColumn{{Name: "PATH", JSONPath: "{.path}"}}},
	{Type: HardwareAddrType, DefaultNamespace: Namespace, Aliases: []string{"hardwareaddresses", "hardwareaddress"},
		PrintColumns: []bus.PrintColumn{{Name: "HWADDR", JSONPath: "{.hardwareAddr}"}}},
	{Type: PlatformConfigType, DefaultNamespace: Namespace, Aliases: []string{"platformconfig"}},
	{Type: ApplyIssueType, DefaultNamespace: Namespace,
		PrintColumns: []bus.PrintColumn{{Name: "STATE", JSONPath: "{.state}"}, {Name: "MESSAGE", JSONPath: "{.message}"}}},
}
