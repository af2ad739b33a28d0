// Package network is talosbox's networkd: it turns the machine config and
// the kernel command line into layered network specs, merges them, applies
// the result to the kernel over netlink, and reads the kernel back into
// status resources, all as controllers on the bus (the Talos pipeline:
// XConfig -> XMerge -> XSpec -> kernel -> XStatus).
//
// Everything networkd does to the kernel is bookkept so that it only ever
// removes what it created: routes carry their own rtm_protocol
// (RouteProtocol), created links carry the link alias LinkAlias, and
// addresses are remembered by the controller that added them.
package network

import (
	"fmt"
	"strings"

	"github.com/talosbox/talosbox/internal/bus"
)

// Namespaces. Layered specs live in ConfigNamespace with IDs
// "<layer>/<id>"; merged specs and everything read from the kernel live in
// Namespace.
const (
	Namespace       = "network"
	ConfigNamespace = "network-config"
)

// Resource types.
const (
	LinkSpecType         = "LinkSpecs.net.talos.dev"
	LinkStatusType       = "LinkStatuses.net.talos.dev"
	AddressSpecType      = "AddressSpecs.net.talos.dev"
	AddressStatusType    = "AddressStatuses.net.talos.dev"
	RouteSpecType        = "RouteSpecs.net.talos.dev"
	RouteStatusType      = "RouteStatuses.net.talos.dev"
	HostnameSpecType     = "HostnameSpecs.net.talos.dev"
	HostnameStatusType   = "HostnameStatuses.net.talos.dev"
	ResolverSpecType     = "ResolverSpecs.net.talos.dev"
	ResolverStatusType   = "ResolverStatuses.net.talos.dev"
	TimeServerSpecType   = "TimeServerSpecs.net.talos.dev"
	TimeServerStatusType = "TimeServerStatuses.net.talos.dev"
	NodeAddressType      = "NodeAddresses.net.talos.dev"
	OperatorSpecType     = "OperatorSpecs.net.talos.dev"
	NetworkStatusType    = "NetworkStatuses.net.talos.dev"
	EtcFileStatusType    = "EtcFileStatuses.net.talos.dev"
	ApplyIssueType       = "ApplyIssues.net.talos.dev"
)

// Singleton IDs, as Talos names them.
const (
	HostnameID       = "hostname"
	ResolverID       = "resolvers"
	TimeServerID     = "timeservers"
	NetworkStatusID  = "status"
	NodeAddressesDef = "default"
	NodeAddressesCur = "current"
)

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
	{Type: ApplyIssueType, DefaultNamespace: Namespace,
		PrintColumns: []bus.PrintColumn{{Name: "STATE", JSONPath: "{.state}"}, {Name: "MESSAGE", JSONPath: "{.message}"}}},
}

// ConfigLayer orders the sources of a spec; a higher layer wins the merge.
type ConfigLayer int

// Layers, lowest first (Talos configlayer.go).
const (
	LayerDefault ConfigLayer = iota
	LayerCmdline
	LayerPlatform
	LayerOperator
	LayerConfiguration
)

var layerNames = []string{"default", "cmdline", "platform", "operator", "configuration"}

func (l ConfigLayer) String() string {
	if l < 0 || int(l) >= len(layerNames) {
		return fmt.Sprintf("layer(%d)", int(l))
	}

	return layerNames[l]
}

// MarshalText renders the layer by name in YAML and JSON.
func (l ConfigLayer) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses a layer name.
func (l *ConfigLayer) UnmarshalText(b []byte) error {
	for i, n := range layerNames {
		if n == string(b) {
			*l = ConfigLayer(i)
			return nil
		}
	}

	return fmt.Errorf("unknown config layer %q", b)
}

// LayeredID is the ID of a spec in ConfigNamespace.
func LayeredID(layer ConfigLayer, id string) string { return layer.String() + "/" + id }

// unlayeredID strips the layer from an ID in ConfigNamespace.
func unlayeredID(id string) string {
	_, rest, ok := strings.Cut(id, "/")
	if !ok {
		return id
	}

	return rest
}
