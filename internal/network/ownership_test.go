package network_test

import (
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

func oneAddress(addr, dst string) *configs.NetworkConfig {
	return &configs.NetworkConfig{Interfaces: []configs.Device{{
		Interface: "eth0",
		Addresses: []string{addr},
		Routes:    []configs.Route{{Network: dst, Gateway: "10.9.0.1", Metric: 50}},
	}}}
}

// An owned address deleted by hand comes back within a second.
func TestDriftIsCorrected(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")

	nd := startNode(t, ns, nil)
	nd.setConfig(oneAddress("10.9.0.2/24", "10.20.0.0/16"))
	nd.waitFor(networkres.AddressStatusType, "address", hasIDs(false, "eth0/10.9.0.2/24"))
	nd.waitFor(networkres.RouteStatusType, "route", hasIDs(false, "inet4/10.9.0.1/10.20.0.0/16/50"))

	for range 3 {
		// Subscribe before deleting, so the re-adds cannot be missed.
		kw := ns.kernelEvents()

		ns.ip("addr", "del", "10.9.0.2/24", "dev", "eth0")

		// The deletion takes the route with it; both come back.
		if took := kw.waitNew(t, "10.9.0.2/24", "10.20.0.0/16", time.Second); took > time.Second {
			t.Fatalf("address and route came back after %s, want < 1s", took)
		}

		if out := ns.ip("route", "show", "10.20.0.0/16"); !strings.Contains(out, "via 10.9.0.1") {
			t.Fatalf("route not back: %q", out)
		}
	}
}

// After a config change networkd removes what it added, and only that: an
// address and a route added by hand stay.
func TestConfigChangeKeepsForeignState(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")
	ns.ip("link", "set", "eth0", "up")
	ns.ip("addr", "add", "10.9.0.99/24", "dev", "eth0")      // foreign, before networkd
	ns.ip("route", "add", "10.77.0.0/16", "via", "10.9.0.1") // foreign route

	nd := startNode(t, ns, nil)
	nd.setConfig(oneAddress("10.9.0.2/24", "10.20.0.0/16"))
	nd.waitFor(networkres.RouteStatusType, "route", hasIDs(false, "inet4/10.9.0.1/10.20.0.0/16/50"))

	ns.ip("route", "add", "10.78.0.0/16", "via", "10.9.0.1", "metric", "50") // foreign, while running

	nd.setConfig(oneAddress("10.9.0.3/24", "10.21.0.0/16"))
	nd.waitFor(networkres.AddressStatusType, "new address, old gone", func(items []bus.Resource) bool {
		m := ids(items)
		return m["eth0/10.9.0.3/24"] != nil && m["eth0/10.9.0.2/24"] == nil
	})
	nd.waitFor(networkres.RouteStatusType, "new route, old gone",
		func(items []bus.Resource) bool {
			m := ids(items)
			return m["inet4/10.9.0.1/10.21.0.0/16/50"] != nil && m["inet4/10.9.0.1/10.20.0.0/16/50"] == nil
		})

	routes := ns.ip("route", "show")
	for _, want := range []string{"10.77.0.0/16 via 10.9.0.1", "10.78.0.0/16 via 10.9.0.1", "10.21.0.0/16 via 10.9.0.1 dev eth0 proto 116 metric 50"} {
		if !strings.Contains(routes, want) {
			t.Errorf("routes lack %q:\n%s", want, routes)
		}
	}

	if addrs := ns.ip("addr", "show", "dev", "eth0"); !strings.Contains(addrs, "10.9.0.99/24") {
		t.Errorf("the foreign address is gone:\n%s", addrs)
	}

	// An empty network config takes everything of networkd's away.
	nd.setConfig(&configs.NetworkConfig{})
	nd.waitFor(networkres.RouteStatusType, "owned routes gone", hasIDs(true, "inet4/10.9.0.1/10.21.0.0/16/50"))
	nd.waitFor(networkres.AddressStatusType, "owned address gone", hasIDs(true, "eth0/10.9.0.3/24"))

	if routes := ns.ip("route", "show"); !strings.Contains(routes, "10.77.0.0/16") || strings.Contains(routes, "proto 116") {
		t.Errorf("after clearing the config:\n%s", routes)
	}
}
