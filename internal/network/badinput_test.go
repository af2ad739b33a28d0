package network_test

import (
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// A link that does not exist yet is waited for and reported; once it
// appears it is configured.
func TestMissingLinkIsWaitedFor(t *testing.T) {
	ns := newNS(t)
	nd := startNode(t, ns, nil)
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{
		Interface: "eth1",
		Addresses: []string{"10.9.5.2/24"},
		MTU:       1280,
		Routes:    []configs.Route{{Network: "10.40.0.0/16", Gateway: "10.9.5.1"}},
	}}})

	if is := nd.issue("link/eth1", "waiting for link eth1"); is.State != networkres.IssuePending {
		t.Errorf("link issue state %q, want pending", is.State)
	}

	nd.issue("address/eth1/10.9.5.2/24", "waiting for link eth1")
	nd.waitFor(networkres.NetworkStatusType, "status with issues", func(items []bus.Resource) bool {
		return len(items) == 1 && strings.Contains(strings.Join(items[0].(*networkres.NetworkStatus).TypedSpec().Issues, "\n"), "link/eth1")
	})

	ns.veth("eth1", "peer1")

	nd.waitFor(networkres.RouteStatusType, "route on the new link", hasIDs(false, "inet4/10.9.5.1/10.40.0.0/16/1024"))
	nd.waitFor(networkres.LinkStatusType, "eth1 up with MTU 1280", func(items []bus.Resource) bool {
		l, ok := ids(items)["eth1"]
		return ok && l.(*networkres.LinkStatus).TypedSpec().Up && l.(*networkres.LinkStatus).TypedSpec().MTU == 1280
	})
	nd.waitFor(networkres.ApplyIssueType, "issues cleared", func(items []bus.Resource) bool { return len(items) == 0 })
}

func TestConflictsAndBadMTU(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")
	ns.veth("eth1", "peer1")
	ns.veth("eth2", "peer2")
	ns.ip("addr", "add", "10.9.7.7/24", "dev", "eth2") // foreign

	nd := startNode(t, ns, nil)
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{
		{Interface: "eth0", Addresses: []string{"10.9.6.2/24"}, MTU: 70000},
		{Interface: "eth1", Addresses: []string{"10.9.6.2/24", "10.9.7.7/24"}},
	}})

	is := nd.issue("link/eth0", "set MTU 70000 on link eth0")
	if is.State != networkres.IssueError || !strings.Contains(is.Message, "invalid argument") {
		t.Errorf("MTU issue: %+v", is)
	}

	is = nd.issue("address/eth1/10.9.6.2/24", "conflicts with eth0/10.9.6.2/24")
	if is.State != networkres.IssueError {
		t.Errorf("conflict issue: %+v", is)
	}

	nd.issue("address/eth1/10.9.7.7/24", "conflicts with eth2/10.9.7.7/24 already in the kernel (not managed by networkd)")

	// The rest still applies: eth0 is up with its address despite its MTU.
	nd.waitFor(networkres.AddressStatusType, "eth0's address", hasIDs(false, "eth0/10.9.6.2/24"))
	nd.waitFor(networkres.AddressStatusType, "no duplicate on eth1", hasIDs(true, "eth1/10.9.6.2/24", "eth1/10.9.7.7/24"))

	// Fixing the config clears the issues.
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{
		{Interface: "eth0", Addresses: []string{"10.9.6.2/24"}, MTU: 9000},
	}})
	nd.waitFor(networkres.ApplyIssueType, "issues cleared", func(items []bus.Resource) bool { return len(items) == 0 })
}

// A foreign route in the way of a configured one is reported, not replaced.
func TestForeignRouteConflict(t *testing.T) {
	ns := newNS(t)
	ns.veth("eth0", "peer0")
	ns.ip("link", "set", "eth0", "up")
	ns.ip("addr", "add", "10.9.0.2/24", "dev", "eth0")
	ns.ip("route", "add", "10.50.0.0/16", "via", "10.9.0.1", "metric", "1024")

	nd := startNode(t, ns, nil)
	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{
		Interface: "eth0", Addresses: []string{"10.9.0.2/24"},
		Routes: []configs.Route{{Network: "10.50.0.0/16", Gateway: "10.9.0.254"}},
	}}})

	nd.issue("route/inet4/10.9.0.254/10.50.0.0/16/1024", "not managed by networkd")

	if routes := ns.ip("route", "show", "10.50.0.0/16"); !strings.Contains(routes, "via 10.9.0.1 ") {
		t.Errorf("the foreign route was changed: %s", routes)
	}
}
