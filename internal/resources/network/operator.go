package network

import (
	"net/netip"

	"github.com/talosbox/talosbox/internal/bus"
)

// OperatorSpecType is the type's name, as Talos has it.
const OperatorSpecType = "OperatorSpecs.net.talos.dev"

// Operator names.
const (
	OperatorDHCP4 = "dhcp4"
	OperatorDHCP6 = "dhcp6"
	// OperatorVIP keeps a shared IP on one control-plane node at a time.
	OperatorVIP = "vip"
)

// VIPOperatorSpec is the shared IP a vip operator campaigns for.
type VIPOperatorSpec struct {
	IP netip.Addr `yaml:"ip" json:"ip"`
	// GratuitousARP announces the new owner to the segment (layer 2).
	GratuitousARP bool `yaml:"gratuitousARP" json:"gratuitousARP"`
}

// OperatorSpecSpec asks for an operator (a DHCP client, a VIP keeper) to
// run on a link. Its ID is "<operator>/<link>".
type OperatorSpecSpec struct {
	Operator  string `yaml:"operator" json:"operator"`
	LinkName  string `yaml:"linkName" json:"linkName"`
	RequireUp bool   `yaml:"requireUp" json:"requireUp"`
	// RouteMetric is the metric of the routes the operator publishes.
	RouteMetric uint32 `yaml:"routeMetric,omitempty" json:"routeMetric,omitempty"`
	// SkipHostnameRequest: the config names the host, so DHCP must not.
	SkipHostnameRequest bool `yaml:"skipHostnameRequest,omitempty" json:"skipHostnameRequest,omitempty"`
	// SkipRoutes: the DHCP lease's routes are not installed.
	SkipRoutes bool   `yaml:"skipRoutes,omitempty" json:"skipRoutes,omitempty"`
	DUIDv6     string `yaml:"duidv6,omitempty" json:"duidv6,omitempty"`
	// ClientIdentifier is what a DHCPv4 client sends as option 61: ""
	// or none for nothing, mac for its hardware address, duid for
	// DUIDRaw (hex).
	ClientIdentifier string `yaml:"clientIdentifier,omitempty" json:"clientIdentifier,omitempty"`
	DUIDRaw          string `yaml:"duidRaw,omitempty" json:"duidRaw,omitempty"`
	// VIP is set for the vip operator.
	VIP   VIPOperatorSpec `yaml:"vip,omitempty" json:"vip,omitempty"`
	Layer ConfigLayer     `yaml:"layer" json:"layer"`
}

func (s OperatorSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// ID is "<operator>/<link>".
func (s OperatorSpecSpec) ID() string { return s.Operator + "/" + s.LinkName }

// OperatorSpec is an OperatorSpecs resource.
type OperatorSpec = bus.Typed[OperatorSpecSpec]
