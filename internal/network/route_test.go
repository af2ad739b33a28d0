package network_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// routeYAML is a route spec as `talosctl get -o yaml` shows it (apid
// encodes specs with yaml.v3), read back as talosctl reads it.
func routeYAML(t *testing.T, spec any) map[string]any {
	t.Helper()

	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}

	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}

	return m
}

// columns renders a type's print columns for a spec as `talosctl get`
// does: header -> cell (only the "{.field}" paths routes use).
func columns(t *testing.T, typ string, spec map[string]any) map[string]string {
	t.Helper()

	for _, d := range networkres.Definitions {
		if d.Type != typ {
			continue
		}

		out := map[string]string{}

		for _, c := range d.PrintColumns {
			field, ok := strings.CutPrefix(c.JSONPath, "{.")
			if !ok || !strings.HasSuffix(field, "}") {
				t.Fatalf("%s column %s: unexpected path %q", typ, c.Name, c.JSONPath)
			}

			if v, ok := spec[strings.TrimSuffix(field, "}")]; ok {
				out[c.Name] = fmt.Sprint(v)
			} else {
				out[c.Name] = "<missing>"
			}
		}

		return out
	}

	t.Fatalf("no definition for %s", typ)

	return nil
}

func checkFields(t *testing.T, what string, got map[string]any, want map[string]any) {
	t.Helper()

	for k, w := range want {
		if v, ok := got[k]; !ok || fmt.Sprint(v) != fmt.Sprint(w) {
			t.Errorf("%s: %s = %v (present %v), want %v; all: %v", what, k, v, ok, w, got)
		}
	}
}

func waitRoute(t *testing.T, nd *node, typ, id string) map[string]any {
	t.Helper()

	var spec any

	nd.waitFor(typ, id, func(items []bus.Resource) bool {
		r, ok := ids(items)[id]
		if ok {
			spec = r.Spec()
		}

		return ok
	})

	return routeYAML(t, spec)
}

// Routes in the kernel, networkd's or not, show as RouteStatuses with
// their destination, gateway and link, in the fields and under the YAML
// names Talos uses, and `talosctl get routes` prints them.
func TestRouteStatusFields(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")
	ns.ip("link", "set", "eth0", "up")
	ns.ip("addr", "add", "10.61.0.2/24", "dev", "eth0")
	ns.ip("-6", "addr", "add", "fd00:61::2/64", "dev", "eth0", "nodad")
	ns.ip("route", "add", "10.62.0.0/16", "via", "10.61.0.1", "dev", "eth0", "metric", "77", "mtu", "1300", "proto", "static")
	ns.ip("route", "add", "default", "via", "10.61.0.1", "dev", "eth0", "metric", "600", "proto", "dhcp")
	ns.ip("route", "add", "blackhole", "10.63.0.0/16", "table", "100")
	ns.ip("-6", "route", "add", "fd00:62::/48", "via", "fd00:61::1", "dev", "eth0", "metric", "78")

	link, err := ns.handle().LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}

	idx := link.Attrs().Index

	nd := startNode(t, ns, nil)

	st := waitRoute(t, nd, networkres.RouteStatusType, "inet4/10.61.0.1/10.62.0.0/16/77")
	checkFields(t, "static route", st, map[string]any{
		"family": "inet4", "dst": "10.62.0.0/16", "src": "", "gateway": "10.61.0.1", "outLinkIndex": idx,
		"outLinkName": "eth0", "table": "main", "priority": 77, "scope": "global", "type": "unicast",
		"flags": "", "protocol": "static", "mtu": 1300,
	})

	if cols := columns(t, networkres.RouteStatusType, st); cols["DESTINATION"] != "10.62.0.0/16" || cols["GATEWAY"] != "10.61.0.1" ||
		cols["LINK"] != "eth0" || cols["METRIC"] != "77" {
		t.Errorf("talosctl get routes columns: %v", cols)
	}

	def := waitRoute(t, nd, networkres.RouteStatusType, "inet4/10.61.0.1//600")
	checkFields(t, "default route", def, map[string]any{"dst": "", "gateway": "10.61.0.1", "protocol": "dhcp", "outLinkName": "eth0"})

	conn := waitRoute(t, nd, networkres.RouteStatusType, "inet4//10.61.0.0/24/0")
	checkFields(t, "connected route", conn, map[string]any{
		"dst": "10.61.0.0/24", "src": "10.61.0.2", "gateway": "", "scope": "link", "protocol": "kernel", "outLinkName": "eth0",
	})

	bh := waitRoute(t, nd, networkres.RouteStatusType, "100/inet4//10.63.0.0/16/0")
	checkFields(t, "blackhole route", bh, map[string]any{"dst": "10.63.0.0/16", "table": "100", "type": "blackhole", "protocol": "boot"})

	v6 := waitRoute(t, nd, networkres.RouteStatusType, "inet6/fd00:61::1/fd00:62::/48/78")
	checkFields(t, "IPv6 route", v6, map[string]any{
		"family": "inet6", "dst": "fd00:62::/48", "gateway": "fd00:61::1", "outLinkName": "eth0", "type": "unicast",
	})

	// networkd's own routes: the spec says where the route came from, the
	// kernel copy carries networkd's protocol.
	nd.setConfig(oneAddress("10.9.0.2/24", "10.20.0.0/16"))

	spec := waitRoute(t, nd, networkres.RouteSpecType, "inet4/10.9.0.1/10.20.0.0/16/50")
	checkFields(t, "configured route spec", spec, map[string]any{
		"family": "inet4", "dst": "10.20.0.0/16", "src": "", "gateway": "10.9.0.1", "outLinkName": "eth0", "table": "main",
		"priority": 50, "scope": "global", "type": "unicast", "flags": "", "protocol": "static", "layer": "configuration",
	})

	if cols := columns(t, networkres.RouteSpecType, spec); cols["DESTINATION"] != "10.20.0.0/16" || cols["GATEWAY"] != "10.9.0.1" {
		t.Errorf("talosctl get routespecs columns: %v", cols)
	}

	own := waitRoute(t, nd, networkres.RouteStatusType, "inet4/10.9.0.1/10.20.0.0/16/50")
	checkFields(t, "networkd's route", own, map[string]any{
		"dst": "10.20.0.0/16", "gateway": "10.9.0.1", "outLinkName": "eth0", "protocol": networkres.RouteProtocol, "managed": true,
	})
}

// The print columns are Talos's for routes, and every one names a field
// the YAML has, for specs and statuses alike.
func TestRouteColumns(t *testing.T) {
	full := map[string]any{
		networkres.RouteStatusType: networkres.RouteStatusSpec{Destination: netip.MustParsePrefix("10.1.0.0/16"), Gateway: netip.MustParseAddr("10.0.0.1")},
		networkres.RouteSpecType:   networkres.RouteSpecSpec{Destination: netip.MustParsePrefix("10.1.0.0/16"), Gateway: netip.MustParseAddr("10.0.0.1")},
	}

	for typ, spec := range full {
		cols := columns(t, typ, routeYAML(t, spec))
		if cols["DESTINATION"] != "10.1.0.0/16" || cols["GATEWAY"] != "10.0.0.1" || cols["LINK"] != "<missing>" && cols["LINK"] != "" {
			t.Errorf("%s: columns %v", typ, cols)
		}

		if _, ok := cols["METRIC"]; !ok {
			t.Errorf("%s: no METRIC column: %v", typ, cols)
		}
	}

	// A default route still has the dst key (empty), as in Talos.
	if m := routeYAML(t, networkres.RouteStatusSpec{}); m["dst"] != "" || m["gateway"] != "" || m["table"] != "unspec" || m["type"] != "unspec" {
		t.Errorf("zero status: %v", m)
	}
}

// The kernel enums read and print as Talos's nethelpers names.
func TestRouteEnums(t *testing.T) {
	for _, tt := range []struct {
		v    interface{ MarshalText() ([]byte, error) }
		want string
	}{
		{networkres.TableMain, "main"}, {networkres.TableLocal, "local"}, {networkres.RoutingTable(100), "100"}, {networkres.RoutingTable(1000), "1000"},
		{networkres.RouteTypeUnicast, "unicast"}, {networkres.RouteTypeLocal, "local"}, {networkres.RouteTypeBroadcast, "broadcast"},
		{networkres.ProtoBoot, "boot"}, {networkres.ProtoStatic, "static"}, {networkres.ProtoKernel, "kernel"}, {networkres.ProtoDHCP, "dhcp"},
		{networkres.RouteProto(networkres.RouteProtocol), "116"},
		{networkres.RouteFlags(0), ""}, {networkres.RouteFlags(0x200 | 0x4), "cloned"}, {networkres.RouteFlags(0x100 | 0x4000), "notify,offload"},
	} {
		b, err := tt.v.MarshalText()
		if err != nil || string(b) != tt.want {
			t.Errorf("%T(%v): %q, %v; want %q", tt.v, tt.v, b, err, tt.want)
		}
	}

	var (
		tbl   networkres.RoutingTable
		typ   networkres.RouteType
		proto networkres.RouteProto
		flags networkres.RouteFlags
	)

	for _, tt := range []struct {
		in  string
		dst interface{ UnmarshalText([]byte) error }
		ok  bool
	}{
		{"nope", &tbl, false}, {"main", &tbl, true}, {"1000", &tbl, true},
		{"300", &typ, false}, {"blackhole", &typ, true},
		{"dhcp", &proto, true}, {"116", &proto, true},
		{"onlink", &flags, false}, {"notify,offload", &flags, true},
	} {
		if err := tt.dst.UnmarshalText([]byte(tt.in)); (err == nil) != tt.ok {
			t.Errorf("parse %q into %T: %v", tt.in, tt.dst, err)
		}
	}

	if tbl != 1000 || typ != 6 || proto != networkres.RouteProtocol || flags != 0x4100 {
		t.Errorf("parsed table %d, type %d, protocol %d, flags %#x", tbl, typ, proto, flags)
	}
}

// Configured and cmdline routes carry Talos's type and protocol.
func TestRouteSpecOrigin(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	nd := startNode(t, ns, nil)
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{
		Interface: "eth0", Addresses: []string{"10.9.0.2/24"},
		Routes: []configs.Route{{Network: "10.40.0.0/16"}},
	}}})

	spec := waitRoute(t, nd, networkres.RouteSpecType, "inet4//10.40.0.0/16/1024")
	checkFields(t, "link route spec", spec, map[string]any{
		"dst": "10.40.0.0/16", "gateway": "", "scope": "link", "type": "unicast", "protocol": "static", "priority": 1024,
	})

	st := waitRoute(t, nd, networkres.RouteStatusType, "inet4//10.40.0.0/16/1024")
	checkFields(t, "link route status", st, map[string]any{"dst": "10.40.0.0/16", "scope": "link", "outLinkName": "eth0", "managed": true})
}
