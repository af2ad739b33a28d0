package dhcp

import (
	"errors"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/testnet"
)

// acquireTimeout bounds one DISCOVER..ACK against a local dnsmasq, with
// room for a lost first DISCOVER on a link that just came up.
const acquireTimeout = 20 * time.Second

func TestLeaseCarriesServerConfiguration(t *testing.T) {
	b := newBench(t)
	b.run(Options{Hostname: "clienthint", RouteMetric: 1024})

	l := b.next(acquireTimeout, Acquired).mustLease(t)

	if !inRange(l.Address.Addr(), "10.5.0.100", "10.5.0.150") || l.Address.Bits() != 24 {
		t.Errorf("address %s, want 10.5.0.100-150/24", l.Address)
	}

	hub := netip.MustParseAddr(hubAddr)

	checks := []struct {
		what      string
		got, want any
	}{
		{"router", l.Router, hub},
		{"server", l.Server, hub},
		{"DNS", l.DNS, []netip.Addr{netip.MustParseAddr("10.5.0.53"), netip.MustParseAddr("10.5.0.54")}},
		{"hostname", l.Hostname, "node-1"}, // dhcp-host's name wins over the hint
		{"domain", l.Domain, "talosbox.test"},
		{"NTP", l.NTP, []netip.Addr{netip.MustParseAddr("10.5.0.123")}},
		{"MTU", l.MTU, 1420},
		{"routes", l.Routes, []Route{{Dst: netip.MustParsePrefix("10.9.0.0/16"), Gateway: hub, Metric: 1024}}},
		{"lease time", l.LeaseTime, 2 * time.Minute},
		{"T1", l.T1, time.Minute},
		{"T2", l.T2, 105 * time.Second},
	}

	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}

	// RFC 3442: with option 121 present the router option is not a route.
	if got := l.InstallRoutes(); !slices.Equal(got, l.Routes) {
		t.Errorf("InstallRoutes = %v, want the classless routes %v", got, l.Routes)
	}

	if time.Since(l.Acquired) > time.Minute || l.Acquired.After(time.Now()) {
		t.Errorf("Acquired = %v", l.Acquired)
	}

	// dnsmasq queues its log lines: they may trail its replies.
	if !eventually(5*time.Second, func() bool { return strings.Contains(b.server.log.String(), "client provides name: clienthint") }) {
		t.Errorf("dnsmasq did not see option 12 from the client:\n%s", b.server.log)
	}

	poll(t, 5*time.Second, "the lease in dnsmasq's lease file", func() bool {
		return strings.Contains(b.server.leases(), clientMAC+" "+l.Address.Addr().String()+" node-1")
	})
}

func TestRenewal(t *testing.T) {
	b := newBench(t)

	// Count DHCP unicast to the server: DISCOVER and the SELECTING
	// REQUEST are broadcast, so only a renewal can match.
	nftables(t, b.nw.Hub, "udp dport 67 ip daddr "+hubAddr+" counter")

	// T1 of a 2-minute dnsmasq lease is a minute; renew after 1 s instead.
	b.run(Options{RenewAfter: time.Second})

	first := b.next(acquireTimeout, Acquired).mustLease(t)

	// Renewed, not Rebound: the unicast REQUEST at T1 was answered.
	ev := b.next(15*time.Second, Renewed, Rebound, Expired)
	if ev.Kind != Renewed {
		t.Fatalf("got %s, want renewed", ev)
	}

	l := ev.mustLease(t)

	if l.Address != first.Address || l.Server != first.Server {
		t.Errorf("renewed %s from %s, held %s from %s", l.Address, l.Server, first.Address, first.Server)
	}

	if !l.Acquired.After(first.Acquired) || l.LeaseTime != 2*time.Minute || l.T1 != time.Second {
		t.Errorf("renewed lease times: acquired %v (first %v), lease %v, T1 %v",
			l.Acquired, first.Acquired, l.LeaseTime, l.T1)
	}

	out, err := testnet.Command(b.nw.Hub, "nft", "list", "chain", "inet", "dhcptest", "in").CombinedOutput()
	if err != nil || !regexp.MustCompile(`counter packets [1-9]`).Match(out) {
		t.Errorf("no unicast to the server counted: %v\n%s", err, out)
	}

	// dnsmasq logs a RENEWING request with the client's address as
	// ciaddr like "DHCPREQUEST(br0) 10.5.0.x <mac>".
	want := "DHCPREQUEST(br0) " + l.Address.Addr().String() + " " + clientMAC
	if !eventually(5*time.Second, func() bool { return strings.Count(b.server.log.String(), want) >= 2 }) {
		t.Errorf("dnsmasq saw %d requests for the address, want 2 or more:\n%s", strings.Count(b.server.log.String(), want), b.server.log)
	}
}

func TestServerRangeChangeForcesNewLease(t *testing.T) {
	b := newBench(t)
	b.run(Options{RenewAfter: time.Second})

	old := b.next(acquireTimeout, Acquired).mustLease(t)

	// The server comes back handing out another range: it must refuse
	// the address at the next renewal and the client start over.
	b.server.stop()
	b.server = startDnsmasq(t, b.nw.Hub, b.dir, "10.5.0.200", "10.5.0.250")

	ev := b.next(30*time.Second, Expired)

	if ev.Lease == nil || ev.Lease.Address != old.Address {
		t.Errorf("expired %v, want the old lease %s", ev.Lease, old.Address)
	}

	if nak := (*NAKError)(nil); !errors.As(ev.Err, &nak) || nak.Server != netip.MustParseAddr(hubAddr) {
		t.Errorf("expired because %v, want a NAK from the server", ev.Err)
	}

	l := b.next(acquireTimeout, Acquired).mustLease(t)
	if !inRange(l.Address.Addr(), "10.5.0.200", "10.5.0.250") {
		t.Errorf("new lease %s, want one in 10.5.0.200-250", l.Address)
	}
}

func TestLinkFlapReacquires(t *testing.T) {
	b := newBench(t)
	b.run(Options{})

	first := b.next(acquireTimeout, Acquired).mustLease(t)

	// The count before the flap must include the first DISCOVER, whose
	// log line may trail the lease (dnsmasq queues its log).
	poll(t, 5*time.Second, "dnsmasq to log the first ACK", func() bool {
		return strings.Contains(b.server.log.String(), "DHCPACK(br0) "+first.Address.Addr().String())
	})

	discovers := strings.Count(b.server.log.String(), "DHCPDISCOVER(br0)")

	b.ip("link", "set", "eth0", "down")
	b.ip("link", "set", "eth0", "up")

	l := b.next(acquireTimeout, Acquired).mustLease(t)

	// Same network: the client asks for its address back and gets it.
	if l.Address != first.Address {
		t.Errorf("re-acquired %s, had %s", l.Address, first.Address)
	}

	if !l.Acquired.After(first.Acquired) {
		t.Errorf("re-acquired lease dated %v, first %v", l.Acquired, first.Acquired)
	}

	if !eventually(5*time.Second, func() bool { return strings.Count(b.server.log.String(), "DHCPDISCOVER(br0)") > discovers }) {
		t.Errorf("no new DISCOVER after the flap:\n%s", b.server.log)
	}
}

func TestReleaseOnShutdown(t *testing.T) {
	b := newBench(t)
	b.run(Options{})

	l := b.next(acquireTimeout, Acquired).mustLease(t)

	poll(t, 5*time.Second, "the lease in dnsmasq's lease file", func() bool {
		return strings.Contains(b.server.leases(), clientMAC)
	})

	b.cancel()

	ev := b.next(10*time.Second, Released)
	if ev.Lease == nil || ev.Lease.Address != l.Address {
		t.Errorf("released %v, want %s", ev.Lease, l.Address)
	}

	poll(t, 5*time.Second, "dnsmasq to drop the lease", func() bool {
		return !strings.Contains(b.server.leases(), clientMAC)
	})

	// dnsmasq queues its log lines and may write them after it rewrote
	// the lease file, so the release is awaited in the log too.
	want := "DHCPRELEASE(br0) " + l.Address.Addr().String() + " " + clientMAC
	if !eventually(5*time.Second, func() bool { return strings.Contains(b.server.log.String(), want) }) {
		t.Errorf("dnsmasq log lacks %q:\n%s", want, b.server.log)
	}
}

// equal compares the values of a table test.
func equal(a, b any) bool {
	switch a := a.(type) {
	case []netip.Addr:
		return slices.Equal(a, b.([]netip.Addr))
	case []Route:
		return slices.Equal(a, b.([]Route))
	}

	return a == b
}

func TestRebindWhenServerIgnoresUnicast(t *testing.T) {
	b := newBench(t)

	// The server's host drops DHCP unicast to it, so renewing at T1 goes
	// unanswered; acquiring and rebinding at T2 are broadcast and get
	// through.
	nftables(t, b.nw.Hub, "udp dport 67 ip daddr "+hubAddr+" drop")
	b.run(Options{RenewAfter: 2 * time.Second, RebindAfter: 4 * time.Second})

	first := b.next(acquireTimeout, Acquired).mustLease(t)

	ev := b.next(15*time.Second, Renewed, Rebound, Expired)
	if ev.Kind != Rebound {
		t.Fatalf("got %s, want rebound", ev)
	}

	if l := ev.mustLease(t); l.Address != first.Address || !l.Acquired.After(first.Acquired) {
		t.Errorf("rebound %s acquired %v, held %s acquired %v", l.Address, l.Acquired, first.Address, first.Acquired)
	}
}

// nftables installs rule in an input chain "in" of table inet dhcptest in
// namespace ns; the namespace's deletion removes it.
func nftables(t *testing.T, ns, rule string) {
	t.Helper()

	nft := testnet.Command(ns, "nft", "-f", "-")
	nft.Stdin = strings.NewReader("table inet dhcptest {\n chain in {\n  type filter hook input priority 0;\n  " + rule + "\n }\n}\n")

	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
}

func TestStartsOnLinkDown(t *testing.T) {
	b := newBench(t)
	b.ip("link", "set", "eth0", "down")
	b.run(Options{})

	// Nothing can be sent while the link is down; the client waits for
	// it rather than failing, and acquires as soon as it is up.
	b.ip("link", "set", "eth0", "up")

	l := b.next(acquireTimeout, Acquired).mustLease(t)
	if !inRange(l.Address.Addr(), "10.5.0.100", "10.5.0.150") {
		t.Errorf("address %s", l.Address)
	}
}
