package dhcp

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func ack(t *testing.T, mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
	t.Helper()

	m, err := dhcpv4.New(append([]dhcpv4.Modifier{
		dhcpv4.WithMessageType(dhcpv4.MessageTypeAck),
		dhcpv4.WithYourIP(net.IPv4(192, 168, 7, 20)),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(net.IPv4(192, 168, 7, 1))),
	}, mods...)...)
	if err != nil {
		t.Fatal(err)
	}

	// Through the wire format, as the client sees it.
	m, err = dhcpv4.FromBytes(m.ToBytes())
	if err != nil {
		t.Fatal(err)
	}

	return m
}

func TestLeaseFromACKDefaults(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// No mask, no lease time, no T1/T2, router but no classless routes.
	l, err := leaseFromACK(ack(t, dhcpv4.WithRouter(net.IPv4(192, 168, 7, 254))), sent, &Options{RouteMetric: 7})
	if err != nil {
		t.Fatal(err)
	}

	if l.Address != netip.MustParsePrefix("192.168.7.20/24") { // class C default
		t.Errorf("address %s", l.Address)
	}

	if l.LeaseTime != defaultLeaseTime || l.T1 != defaultLeaseTime/2 || l.T2 != defaultLeaseTime*7/8 {
		t.Errorf("times %v %v %v", l.LeaseTime, l.T1, l.T2)
	}

	if l.Acquired != sent || l.Expiry() != sent.Add(defaultLeaseTime) {
		t.Errorf("acquired %v expiry %v", l.Acquired, l.Expiry())
	}

	want := []Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("192.168.7.254"), Metric: 7}}
	if got := l.InstallRoutes(); !slices.Equal(got, want) {
		t.Errorf("InstallRoutes = %v, want %v", got, want)
	}
}

func TestLeaseFromACKTimers(t *testing.T) {
	secs := func(o dhcpv4.OptionCode, d time.Duration) dhcpv4.Modifier {
		return dhcpv4.WithOption(dhcpv4.Option{Code: o, Value: dhcpv4.Duration(d)})
	}

	for _, tc := range []struct {
		name   string
		mods   []dhcpv4.Modifier
		opts   Options
		t1, t2 time.Duration
	}{
		{"server's", []dhcpv4.Modifier{secs(dhcpv4.OptionRenewTimeValue, 100*time.Second), secs(dhcpv4.OptionRebindingTimeValue, 200*time.Second)}, Options{}, 100 * time.Second, 200 * time.Second},
		{"T2 beyond lease", []dhcpv4.Modifier{secs(dhcpv4.OptionRebindingTimeValue, time.Hour)}, Options{}, 300 * time.Second, 525 * time.Second},
		{"T1 beyond T2", []dhcpv4.Modifier{secs(dhcpv4.OptionRenewTimeValue, 590*time.Second)}, Options{}, 300 * time.Second, 525 * time.Second},
		{"overrides", nil, Options{RenewAfter: time.Second, RebindAfter: 2 * time.Second}, time.Second, 2 * time.Second},
		{"override past lease", nil, Options{RenewAfter: time.Hour, RebindAfter: time.Hour}, 300 * time.Second, 525 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mods := append([]dhcpv4.Modifier{dhcpv4.WithLeaseTime(600)}, tc.mods...)

			l, err := leaseFromACK(ack(t, mods...), time.Now(), &tc.opts)
			if err != nil {
				t.Fatal(err)
			}

			if l.T1 != tc.t1 || l.T2 != tc.t2 || l.LeaseTime != 10*time.Minute {
				t.Errorf("T1 %v T2 %v lease %v, want %v %v 10m", l.T1, l.T2, l.LeaseTime, tc.t1, tc.t2)
			}
		})
	}
}

func TestLeaseFromACKRejects(t *testing.T) {
	if _, err := leaseFromACK(ack(t, dhcpv4.WithYourIP(net.IPv4zero)), time.Now(), &Options{}); err == nil {
		t.Error("ACK without yiaddr accepted")
	}

	bad := dhcpv4.WithOption(dhcpv4.Option{Code: dhcpv4.OptionSubnetMask, Value: dhcpv4.IP(net.IPv4(255, 0, 255, 0).To4())})
	if _, err := leaseFromACK(ack(t, bad), time.Now(), &Options{}); err == nil {
		t.Error("non-contiguous mask accepted")
	}
}

func TestUDP4RoundTrip(t *testing.T) {
	payload := []byte("a DHCP message, odd length")
	pkt := udp4(payload, netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1"))

	// A correct checksum sums (with itself) to all ones: fold gives 0.
	if s := fold(sum16(pkt[:20], 0)); s != 0 {
		t.Errorf("IP header checksum off by %#x", s)
	}

	pseudo := []byte{10, 0, 0, 2, 10, 0, 0, 1, 0, unix.IPPROTO_UDP, 0, byte(8 + len(payload))}
	if s := fold(sum16(pkt[20:], sum16(pseudo, 0))); s != 0 {
		t.Errorf("UDP checksum off by %#x", s)
	}

	// Swap the ports so that the packet is addressed to the client.
	pkt[20], pkt[21], pkt[22], pkt[23] = pkt[22], pkt[23], pkt[20], pkt[21]

	got, ok := udp4Payload(append(pkt, 0, 0, 0)) // Ethernet padding is ignored
	if !ok || string(got) != string(payload) {
		t.Errorf("payload %q %v", got, ok)
	}

	if _, ok := udp4Payload(pkt[:27]); ok {
		t.Error("truncated packet accepted")
	}
}

func TestLinkWatchTransitions(t *testing.T) {
	w := &linkWatch{name: "eth0", changed: make(chan struct{})}

	upd := func(typ uint16, name string, index int32, flags uint32) {
		u := netlink.LinkUpdate{Link: &netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: name, Index: int(index)}}}
		u.Header.Type, u.Index, u.Flags = typ, index, flags
		w.update(u)
	}

	expect := func(what string, want bool, ch <-chan struct{}, transition bool) <-chan struct{} {
		t.Helper()

		up, next := w.state()
		if up != want {
			t.Errorf("%s: up = %v", what, up)
		}

		select {
		case <-ch:
			if !transition {
				t.Errorf("%s: spurious change", what)
			}
		default:
			if transition {
				t.Errorf("%s: change not signalled", what)
			}
		}

		return next
	}

	const running = unix.IFF_UP | unix.IFF_RUNNING

	_, ch := w.state()
	upd(unix.RTM_NEWLINK, "eth1", 3, running)
	ch = expect("other link", false, ch, false)
	upd(unix.RTM_NEWLINK, "eth0", 2, unix.IFF_UP) // no carrier yet
	ch = expect("no carrier", false, ch, false)
	upd(unix.RTM_NEWLINK, "eth0", 2, running)
	ch = expect("up", true, ch, true)
	upd(unix.RTM_NEWLINK, "eth0", 2, running) // e.g. an MTU change
	ch = expect("still up", true, ch, false)
	upd(unix.RTM_NEWLINK, "wan", 2, running) // renamed away
	ch = expect("renamed", false, ch, true)
	upd(unix.RTM_NEWLINK, "eth0", 5, running) // another link takes the name
	ch = expect("new eth0", true, ch, true)
	upd(unix.RTM_DELLINK, "eth0", 5, running)
	expect("deleted", false, ch, true)
}

func TestBackoffBounded(t *testing.T) {
	var b backoff

	for i, lo := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 16 * time.Second} {
		if d := b.next(); d < lo || d >= 2*lo {
			t.Errorf("attempt %d: %v, want [%v, %v)", i, d, lo, 2*lo)
		}
	}
}
