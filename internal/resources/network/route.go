package network

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name, as Talos has it.
const (
	RouteSpecType   = "RouteSpecs.net.talos.dev"
	RouteStatusType = "RouteStatuses.net.talos.dev"
)

// DefaultRouteMetric is the metric of a route that names none (Talos's).
const DefaultRouteMetric = 1024

// RouteProtocol is the rtm_protocol networkd stamps on every route it adds.
// It is how networkd tells its own routes from anyone else's, across its
// own restarts: only routes with this protocol are ever replaced or removed.
// (A spec's Protocol says where the route came from, as Talos does; the
// kernel copy always carries this one.)
const RouteProtocol = 116

// RouteSpecSpec is a route networkd keeps in the kernel. Field names and
// their YAML follow Talos's RouteSpecSpec.
type RouteSpecSpec struct {
	Family string `yaml:"family" json:"family"`
	// Destination is invalid (zero) for a default route.
	Destination netip.Prefix `yaml:"dst" json:"dst"`
	Source      netip.Addr   `yaml:"src" json:"src"`
	Gateway     netip.Addr   `yaml:"gateway" json:"gateway"`
	OutLinkName string       `yaml:"outLinkName,omitempty" json:"outLinkName,omitempty"`
	Table       RoutingTable `yaml:"table" json:"table"`
	Priority    uint32       `yaml:"priority,omitempty" json:"priority,omitempty"`
	// Scope is "global", "link" (a route without a gateway) or "host".
	Scope    string     `yaml:"scope" json:"scope"`
	Type     RouteType  `yaml:"type" json:"type"`
	Flags    RouteFlags `yaml:"flags" json:"flags"`
	Protocol RouteProto `yaml:"protocol" json:"protocol"`
	// Layer is Talos's ConfigLayer ("layer" in YAML).
	Layer ConfigLayer `yaml:"layer" json:"layer"`
	MTU   uint32      `yaml:"mtu,omitempty" json:"mtu,omitempty"`
}

func (s RouteSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// ID is the Talos ID: "inet4/10.0.0.1/10.2.0.0/16/1024", with an empty
// destination for a default route ("inet4/10.0.0.1//1024"). Routes outside
// the main table are prefixed with the table number.
func (s RouteSpecSpec) ID() string {
	return RouteID(s.Table, s.Family, s.Gateway, s.Destination, s.Priority)
}

// RouteID builds a route ID; see RouteSpecSpec.ID.
func RouteID(table RoutingTable, family string, gw netip.Addr, dst netip.Prefix, prio uint32) string {
	g, d := "", ""
	if gw.IsValid() {
		g = gw.String()
	}

	if dst.IsValid() && dst.Bits() != 0 {
		d = dst.String()
	}

	id := fmt.Sprintf("%s/%s/%s/%d", family, g, d, prio)
	if table != 0 && table != TableMain {
		id = fmt.Sprintf("%d/%s", uint32(table), id)
	}

	return id
}

// RouteSpec is a RouteSpecs resource.
type RouteSpec = bus.Typed[RouteSpecSpec]

// RouteStatusSpec is a route as the kernel reports it. Field names and
// their YAML follow Talos's RouteStatusSpec.
type RouteStatusSpec struct {
	Family       string       `yaml:"family" json:"family"`
	Destination  netip.Prefix `yaml:"dst" json:"dst"`
	Source       netip.Addr   `yaml:"src" json:"src"`
	Gateway      netip.Addr   `yaml:"gateway" json:"gateway"`
	OutLinkIndex uint32       `yaml:"outLinkIndex,omitempty" json:"outLinkIndex,omitempty"`
	OutLinkName  string       `yaml:"outLinkName,omitempty" json:"outLinkName,omitempty"`
	Table        RoutingTable `yaml:"table" json:"table"`
	Priority     uint32       `yaml:"priority" json:"priority"`
	Scope        string       `yaml:"scope" json:"scope"`
	Type         RouteType    `yaml:"type" json:"type"`
	Flags        RouteFlags   `yaml:"flags" json:"flags"`
	Protocol     RouteProto   `yaml:"protocol" json:"protocol"`
	MTU          uint32       `yaml:"mtu,omitempty" json:"mtu,omitempty"`
	// Managed is set on routes networkd added (RouteProtocol); not in Talos.
	Managed bool `yaml:"managed,omitempty" json:"managed,omitempty"`
}

// RouteStatus is a RouteStatuses resource.
type RouteStatus = bus.Typed[RouteStatusSpec]

// RoutingTable is a routing table number. It prints as Talos's
// nethelpers.RoutingTable: "unspec", "default", "main", "local", or the
// number.
type RoutingTable uint32

// Routing tables.
const (
	TableUnspec  RoutingTable = 0
	TableDefault RoutingTable = 253
	TableMain    RoutingTable = 254
	TableLocal   RoutingTable = 255
)

var tableNames = enumNames{0: "unspec", 253: "default", 254: "main", 255: "local"}

func (t RoutingTable) String() string { return tableNames.format(uint32(t)) }

// MarshalText renders the table by name in YAML and JSON.
func (t RoutingTable) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a table name or number.
func (t *RoutingTable) UnmarshalText(b []byte) error {
	v, err := tableNames.parse("routing table", string(b), 32)
	*t = RoutingTable(v)

	return err
}

// RouteType is a route's rtm_type, printed as Talos's nethelpers.RouteType.
type RouteType uint8

// Route types (RTN_*).
const (
	RouteTypeUnspec    RouteType = 0
	RouteTypeUnicast   RouteType = 1
	RouteTypeLocal     RouteType = 2
	RouteTypeBroadcast RouteType = 3
	RouteTypeBlackhole RouteType = 6
)

var routeTypeNames = enumNames{
	0: "unspec", 1: "unicast", 2: "local", 3: "broadcast", 4: "anycast", 5: "multicast",
	6: "blackhole", 7: "unreachable", 8: "prohibit", 9: "throw", 10: "nat", 11: "xresolve",
}

func (t RouteType) String() string { return routeTypeNames.format(uint32(t)) }

// MarshalText renders the type by name in YAML and JSON.
func (t RouteType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a type name or number.
func (t *RouteType) UnmarshalText(b []byte) error {
	v, err := routeTypeNames.parse("route type", string(b), 8)
	*t = RouteType(v)

	return err
}

// RouteProto is a route's rtm_protocol, printed as Talos's
// nethelpers.RouteProtocol. Numbers without a name (networkd's own
// RouteProtocol among them) print as the number.
type RouteProto uint8

// Route protocols (RTPROT_*) networkd's sources use.
const (
	ProtoUnspec RouteProto = 0
	ProtoKernel RouteProto = 2
	ProtoBoot   RouteProto = 3
	ProtoStatic RouteProto = 4
	ProtoDHCP   RouteProto = 16
)

var protoNames = enumNames{
	0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static", 9: "ra", 10: "mrt", 11: "zebra", 12: "bird",
	13: "dnrouted", 14: "xorp", 15: "ntk", 16: "dhcp", 17: "mrtd", 18: "keepalived", 42: "babel", 99: "openr",
	186: "bgp", 187: "isis", 188: "ospf", 189: "rip", 192: "eigrp",
}

func (p RouteProto) String() string { return protoNames.format(uint32(p)) }

// MarshalText renders the protocol by name in YAML and JSON.
func (p RouteProto) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a protocol name or number.
func (p *RouteProto) UnmarshalText(b []byte) error {
	v, err := protoNames.parse("route protocol", string(b), 8)
	*p = RouteProto(v)

	return err
}

// RouteFlags are a route's rtm_flags, printed as Talos's
// nethelpers.RouteFlags: the names of the RTM_F_* bits set, joined by
// commas ("" for none); other bits (RTNH_F_*) are not printed.
type RouteFlags uint32

var routeFlagNames = []string{"notify", "cloned", "equalize", "prefix", "lookup_table", "fib_match", "offload", "trap"}

const routeFlagFirst = 0x100 // RTM_F_NOTIFY

func (f RouteFlags) String() string {
	var names []string

	for i, n := range routeFlagNames {
		if f&(routeFlagFirst<<i) != 0 {
			names = append(names, n)
		}
	}

	return strings.Join(names, ",")
}

// MarshalText renders the flags by name in YAML and JSON.
func (f RouteFlags) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText parses comma-separated flag names.
func (f *RouteFlags) UnmarshalText(b []byte) error {
	*f = 0

	for n := range strings.SplitSeq(string(b), ",") {
		if n == "" {
			continue
		}

		i := slices.Index(routeFlagNames, n)
		if i < 0 {
			return fmt.Errorf("unknown route flag %q", n)
		}

		*f |= routeFlagFirst << i
	}

	return nil
}

// enumNames names the values of a kernel enum; values without a name
// print as their number.
type enumNames map[uint32]string

func (e enumNames) format(v uint32) string {
	if n, ok := e[v]; ok {
		return n
	}

	return strconv.FormatUint(uint64(v), 10)
}

func (e enumNames) parse(what, s string, bits int) (uint32, error) {
	for v, n := range e {
		if n == s {
			return v, nil
		}
	}

	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("unknown %s %q", what, s)
	}

	return uint32(v), nil
}

// routeColumns are the columns `talosctl get routes` prints (Talos's).
var routeColumns = []bus.PrintColumn{
	{Name: "DESTINATION", JSONPath: "{.dst}"}, {Name: "GATEWAY", JSONPath: "{.gateway}"},
	{Name: "LINK", JSONPath: "{.outLinkName}"}, {Name: "METRIC", JSONPath: "{.priority}"},
}
