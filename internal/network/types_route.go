package network

import (
	"fmt"
	"net/netip"

	"github.com/talosbox/talosbox/internal/bus"
)

// DefaultRouteMetric is the metric of a route that names none (Talos's).
const DefaultRouteMetric = 1024

// RouteProtocol is the rtm_protocol networkd stamps on every route it adds.
// It is how networkd tells its own routes from anyone else's, across its
// own restarts: only routes with this protocol are ever replaced or removed.
const RouteProtocol = 116

// Routing tables.
const (
	TableMain  = 254
	TableLocal = 255
)

// RouteSpecSpec is a route networkd keeps in the kernel.
type RouteSpecSpec struct {
	Family string `yaml:"family" json:"family"`
	// Destination is invalid (zero) for a default route.
	Destination netip.Prefix `yaml:"destination,omitempty" json:"destination,omitempty"`
	Source      netip.Addr   `yaml:"source,omitempty" json:"source,omitempty"`
	Gateway     netip.Addr   `yaml:"gateway,omitempty" json:"gateway,omitempty"`
	OutLinkName string       `yaml:"outLinkName,omitempty" json:"outLinkName,omitempty"`
	Table       int          `yaml:"table" json:"table"`
	Priority    uint32       `yaml:"priority" json:"priority"`
	// Scope is "global" or "link" (a route without a gateway).
	Scope string      `yaml:"scope" json:"scope"`
	MTU   uint32      `yaml:"mtu,omitempty" json:"mtu,omitempty"`
	Layer ConfigLayer `yaml:"layer" json:"layer"`
}

func (s RouteSpecSpec) layer() ConfigLayer { return s.Layer }

// ID is the Talos ID: "inet4/10.0.0.1/10.2.0.0/16/1024", with an empty
// destination for a default route ("inet4/10.0.0.1//1024"). Routes outside
// the main table are prefixed with the table number.
func (s RouteSpecSpec) ID() string {
	return RouteID(s.Table, s.Family, s.Gateway, s.Destination, s.Priority)
}

// RouteID builds a route ID; see RouteSpecSpec.ID.
func RouteID(table int, family string, gw netip.Addr, dst netip.Prefix, prio uint32) string {
	g, d := "", ""
	if gw.IsValid() {
		g = gw.String()
	}

	if dst.IsValid() && dst.Bits() != 0 {
		d = dst.String()
	}

	id := fmt.Sprintf("%s/%s/%s/%d", family, g, d, prio)
	if table != 0 && table != TableMain {
		id = fmt.Sprintf("%d/%s", table, id)
	}

	return id
}

// RouteSpec is a RouteSpecs resource.
type RouteSpec = bus.Typed[RouteSpecSpec]

// RouteStatusSpec is a route as the kernel reports it.
type RouteStatusSpec struct {
	Family      string       `yaml:"family" json:"family"`
	Destination netip.Prefix `yaml:"destination,omitempty" json:"destination,omitempty"`
	Source      netip.Addr   `yaml:"source,omitempty" json:"source,omitempty"`
	Gateway     netip.Addr   `yaml:"gateway,omitempty" json:"gateway,omitempty"`
	OutLinkIdx  int          `yaml:"outLinkIndex" json:"outLinkIndex"`
	OutLinkName string       `yaml:"outLinkName,omitempty" json:"outLinkName,omitempty"`
	Table       int          `yaml:"table" json:"table"`
	Priority    uint32       `yaml:"priority" json:"priority"`
	Scope       string       `yaml:"scope" json:"scope"`
	Protocol    int          `yaml:"protocol" json:"protocol"`
	MTU         uint32       `yaml:"mtu,omitempty" json:"mtu,omitempty"`
	// Managed is set on routes networkd added (RouteProtocol).
	Managed bool `yaml:"managed,omitempty" json:"managed,omitempty"`
}

// RouteStatus is a RouteStatuses resource.
type RouteStatus = bus.Typed[RouteStatusSpec]
