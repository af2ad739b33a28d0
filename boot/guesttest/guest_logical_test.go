//go:build e2e

package guesttest

// The guest side of the dummy and 802.3ad checks (runs inside QEMU).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/network"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// serveSink reads each connection to its end and answers "got <bytes>".
func serveSink(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}

		go func() {
			defer c.Close()

			_ = c.SetDeadline(time.Now().Add(20 * time.Second))

			n, err := io.Copy(io.Discard, c)
			if err != nil {
				return
			}

			fmt.Fprintf(c, "got %d\n", n)
		}()
	}
}

// sink sends size bytes to the peer's sink and checks all arrived.
func (g *guest) sink(ctx context.Context, size int) error {
	d := net.Dialer{Timeout: 3 * time.Second}

	c, err := d.DialContext(ctx, "tcp4", net.JoinHostPort(g.spec.Peer, fmt.Sprint(sinkPort)))
	if err != nil {
		return err
	}
	defer c.Close()

	_ = c.SetDeadline(time.Now().Add(15 * time.Second))

	if _, err := c.Write(make([]byte, size)); err != nil {
		return err
	}

	if err := c.(*net.TCPConn).CloseWrite(); err != nil { //nolint:forcetypeassert // tcp4
		return err
	}

	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}

	if want := fmt.Sprintf("got %d\n", size); got != want {
		return fmt.Errorf("peer's sink answered %q, want %q", got, want)
	}

	return nil
}

// runDummy: networkd created the dummy link (the module was loaded with
// numdummies=0, so the kernel made none), brought it up and gave it its
// address; the address takes local TCP connections and the prefix routes
// through the link.
func (g *guest) runDummy(ctx context.Context) (string, error) {
	name := g.spec.Link

	prefix, err := netlink.ParseIPNet(g.spec.Addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", g.spec.Addr, err)
	}

	var link netlink.Link

	if err := waitFor(ctx, name+" up with "+g.spec.Addr, func() (bool, error) {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return false, err
		}

		if l.Attrs().Flags&net.FlagUp == 0 {
			return false, fmt.Errorf("%s is down", name)
		}

		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return false, err
		}

		for _, a := range addrs {
			if a.IPNet.String() == prefix.String() {
				link = l
				return true, nil
			}
		}

		return false, fmt.Errorf("%s has addresses %v", name, addrs)
	}); err != nil {
		return "", err
	}

	a := link.Attrs()

	if link.Type() != networkres.KindDummy {
		return "", fmt.Errorf("%s is a %s link, not a dummy", name, link.Type())
	}

	if a.Alias != network.LinkAlias {
		return "", fmt.Errorf("%s has alias %q, not networkd's %q: networkd did not create it", name, a.Alias, network.LinkAlias)
	}

	if a.RawFlags&unix.IFF_LOWER_UP == 0 {
		return "", fmt.Errorf("%s has no carrier (flags %#x)", name, a.RawFlags)
	}

	// A dummy does not manage its carrier, so the kernel reports its
	// operational state as unknown, as for lo; up would do as well.
	if a.OperState != netlink.OperUnknown && a.OperState != netlink.OperUp {
		return "", fmt.Errorf("%s operational state is %s", name, a.OperState)
	}

	// Another host of the prefix (.3 for .1) is reached through the link.
	other := slices.Clone(prefix.IP.To4())
	other[3] ^= 2

	routes, err := netlink.RouteGet(other)
	if err != nil {
		return "", fmt.Errorf("route to %s: %w", other, err)
	}

	if len(routes) == 0 || routes[0].LinkIndex != a.Index {
		return "", fmt.Errorf("route to %s is %v, not through %s (index %d)", other, routes, name, a.Index)
	}

	ln, err := net.Listen("tcp4", net.JoinHostPort(prefix.IP.String(), "0"))
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", prefix.IP, err)
	}
	defer ln.Close()

	go g.serveEcho(ln)

	d := net.Dialer{Timeout: 3 * time.Second}

	c, err := d.DialContext(ctx, "tcp4", ln.Addr().String())
	if err != nil {
		return "", err
	}
	defer c.Close()

	_ = c.SetDeadline(time.Now().Add(5 * time.Second))

	if _, err := fmt.Fprintf(c, "ping from %s\n", g.spec.Name); err != nil {
		return "", err
	}

	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("echo at %s: %w", ln.Addr(), err)
	}

	if want := fmt.Sprintf("pong from %s: ping from %s\n", g.spec.Name, g.spec.Name); got != want {
		return "", fmt.Errorf("echo at %s answered %q, want %q", ln.Addr(), got, want)
	}

	return fmt.Sprintf("%s kind %s alias %q up, lower-up, oper %s, %s; %s routes via %s; TCP %s -> %s echoed",
		name, link.Type(), a.Alias, a.OperState, prefix, other, name, c.LocalAddr(), ln.Addr()), nil
}

// LACP port state bits (IEEE 802.1AX): activity, short timeout,
// aggregation, synchronization, collecting, distributing; then
// defaulted and expired, which a negotiated port must not have.
const (
	lacpNegotiated = 0x3f
	lacpStale      = 0xc0
)

// lacpState is what sysfs shows of an 802.3ad bond's aggregation.
type lacpState struct {
	members   []string
	agg       string // the active aggregator's ID
	ports     string // its number of ports
	partner   string // its partner's system MAC
	actorKey  string
	memberAgg map[string]string
	actorSt   map[string]int
	partnerSt map[string]int
}

func readLACP(bond string) (*lacpState, error) {
	dir := "/sys/class/net/" + bond + "/bonding/"

	slaves, err := sysfs(dir + "slaves")
	if err != nil {
		return nil, err
	}

	s := &lacpState{members: strings.Fields(slaves), memberAgg: map[string]string{}, actorSt: map[string]int{}, partnerSt: map[string]int{}}

	// The ad_ attributes are unreadable (EINVAL) while the bond has no
	// active aggregator.
	s.agg, err = sysfs(dir + "ad_aggregator")
	if err != nil {
		return s, fmt.Errorf("no active aggregator: %w", err)
	}

	s.ports, _ = sysfs(dir + "ad_num_ports")
	s.partner, _ = sysfs(dir + "ad_partner_mac")
	s.actorKey, _ = sysfs(dir + "ad_actor_key")

	for _, m := range s.members {
		sd := "/sys/class/net/" + m + "/bonding_slave/"
		s.memberAgg[m], _ = sysfs(sd + "ad_aggregator_id")

		a, _ := sysfs(sd + "ad_actor_oper_port_state")
		p, _ := sysfs(sd + "ad_partner_oper_port_state")
		s.actorSt[m], s.partnerSt[m] = atoi(a), atoi(p)
	}

	return s, nil
}

func (s *lacpState) String() string {
	var b strings.Builder

	fmt.Fprintf(&b, "aggregator %s with %s ports, partner %s, actor key %s", s.agg, s.ports, s.partner, s.actorKey)

	for _, m := range s.members {
		fmt.Fprintf(&b, "; %s in aggregator %s, actor state %#x, partner state %#x", m, s.memberAgg[m], s.actorSt[m], s.partnerSt[m])
	}

	return b.String()
}

// negotiated: both members sit in the active aggregator, and both ends
// of each member's link are collecting and distributing, fast, with
// information from a live partner.
func (s *lacpState) negotiated() error {
	if len(s.members) != 2 || s.ports != "2" {
		return fmt.Errorf("want the 2 members in the active aggregator: %s", s)
	}

	if s.partner == "" || s.partner == "00:00:00:00:00:00" {
		return fmt.Errorf("no partner: %s", s)
	}

	for _, m := range s.members {
		ok := func(st int) bool { return st&lacpNegotiated == lacpNegotiated && st&lacpStale == 0 }

		if s.memberAgg[m] != s.agg || !ok(s.actorSt[m]) || !ok(s.partnerSt[m]) {
			return fmt.Errorf("%s not negotiated: %s", m, s)
		}
	}

	return nil
}

// runLACP: the bond aggregates both members with the peer's bond over
// LACP (fast), has the configured settings, and carries traffic, flows
// spread over both members by the layer3+4 hash.
func (g *guest) runLACP(ctx context.Context) (string, error) {
	bond := g.spec.Link

	var st *lacpState

	if err := waitFor(ctx, bond+" to aggregate both members with the peer", func() (bool, error) {
		var err error
		if st, err = readLACP(bond); err != nil {
			return false, err
		}

		err = st.negotiated()

		return err == nil, err
	}); err != nil {
		return "", err
	}

	g.phase("lacp-negotiated %s", st)

	dir := "/sys/class/net/" + bond + "/bonding/"

	for attr, want := range map[string]string{"mode": "802.3ad", "lacp_rate": "fast", "xmit_hash_policy": "layer3+4", "miimon": "100"} {
		if v, err := sysfs(dir + attr); err != nil || strings.Fields(v + " ")[0] != want {
			return "", fmt.Errorf("%s %s is %q (%v), want %s", bond, attr, v, err, want)
		}
	}

	if err := g.echo(ctx); err != nil {
		return "", err
	}

	// Each flow leaves through one member (layer3+4 hashes the ports):
	// flows from new source ports must end up using both. A member whose
	// transmitted bytes grew by the whole stream carried it (LACPDUs and
	// ACKs add a few hundred bytes).
	const size = 64 << 10

	carried := map[string]int{}

	var flows int

	for flows = 1; flows <= 32; flows++ {
		before, err := txBytes(st.members)
		if err != nil {
			return "", err
		}

		if err := g.sink(ctx, size); err != nil {
			return "", fmt.Errorf("flow %d to %s's sink: %w", flows, g.spec.PeerName, err)
		}

		after, err := txBytes(st.members)
		if err != nil {
			return "", err
		}

		for i, m := range st.members {
			if after[i]-before[i] >= size {
				carried[m]++
			}
		}

		if len(carried) == len(st.members) {
			break
		}
	}

	if len(carried) != len(st.members) {
		return "", fmt.Errorf("%d flows of %d bytes left only through %v: %s", flows-1, size, carried, st)
	}

	mac, err := sysfs("/sys/class/net/" + bond + "/address")
	if err != nil {
		return "", err
	}

	// Still aggregated after the traffic.
	if st, err = readLACP(bond); err == nil {
		err = st.negotiated()
	}

	if err != nil {
		return "", fmt.Errorf("after traffic: %w", err)
	}

	g.phase("lacp-ready system=%s partner=%s", mac, st.partner)

	return fmt.Sprintf("%s 802.3ad fast layer3+4 miimon 100, system %s: %s; echo, then %d flows of %d bytes spread %v",
		bond, mac, st, flows, size, carried), nil
}

func txBytes(links []string) ([]int, error) {
	out := make([]int, len(links))

	for i, l := range links {
		v, err := sysfs("/sys/class/net/" + l + "/statistics/tx_bytes")
		if err != nil {
			return nil, err
		}

		out[i] = atoi(v)
	}

	return out, nil
}

// dumpBonding prints the bonding driver's own report of every bond.
func dumpBonding(con io.Writer) {
	files, _ := filepath.Glob("/proc/net/bonding/*")

	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}

		fmt.Fprintf(con, "%s:\n%s\n", f, b)
	}
}
