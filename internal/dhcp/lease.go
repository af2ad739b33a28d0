package dhcp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

// Lease is what a DHCPv4 server granted: the address and the configuration
// that came with it. A Lease handed out in an Event is never modified by the
// client afterwards; callers must not modify it either (it may be shared).
type Lease struct {
	// Address is yiaddr with the subnet mask (option 1); without a mask the
	// classful default is used, as old clients did.
	Address netip.Prefix
	// Router is the first router of option 3 (zero if none). RFC 3442 says a
	// client that received Routes must ignore it; see InstallRoutes.
	Router   netip.Addr
	DNS      []netip.Addr // option 6
	Hostname string       // option 12
	Domain   string       // option 15
	MTU      int          // option 26, 0 if not sent
	// Routes are the classless static routes of option 121, each carrying
	// Options.RouteMetric.
	Routes []Route
	NTP    []netip.Addr // option 42
	// RouteMetric is Options.RouteMetric, copied here so that the lease
	// alone says how to install its routes.
	RouteMetric int
	// Server is the server identifier (option 54): where renewals and the
	// release are unicast.
	Server netip.Addr
	// LeaseTime, T1 and T2 count from Acquired. T1 and T2 are the server's
	// (options 58, 59) or the RFC 2131 defaults (1/2 and 7/8 of LeaseTime),
	// unless Options.RenewAfter / RebindAfter replaced them.
	LeaseTime, T1, T2 time.Duration
	// Acquired is when the request that got this lease was sent (RFC 2131
	// 4.4.1 counts lease times from then, not from the reply).
	Acquired time.Time
}

// Route is one route a lease asks for.
type Route struct {
	Dst     netip.Prefix
	Gateway netip.Addr
	Metric  int // Options.RouteMetric
}

// Expiry is when the lease runs out.
func (l *Lease) Expiry() time.Time { return l.Acquired.Add(l.LeaseTime) }

// InstallRoutes is the route set a host should install for the lease: the
// classless static routes if the server sent any, else a default route via
// Router. RFC 3442 section 3 requires ignoring option 3 when option 121 is
// present, which is why Router is not added to Routes.
func (l *Lease) InstallRoutes() []Route {
	if len(l.Routes) > 0 {
		return append([]Route(nil), l.Routes...)
	}

	if !l.Router.IsValid() {
		return nil
	}

	return []Route{{Dst: netip.PrefixFrom(netip.IPv4Unspecified(), 0), Gateway: l.Router, Metric: l.RouteMetric}}
}

// EventKind says what happened to the lease.
type EventKind int

// The event kinds. Acquired, Renewed and Rebound carry the complete lease
// now held, which replaces whatever an earlier event carried (its address
// may differ: after a link flap onto another network no Expired comes
// first), so a consumer should derive its configuration from the latest
// lease alone. Expired and Released carry the lease that is gone: nothing
// is held until the next Acquired. Failed carries Err and, if one is still
// held, the lease; the client keeps trying.
const (
	// Acquired: a new lease after DISCOVER/OFFER/REQUEST/ACK; after a link
	// flap or a lost lease this may replace an earlier one.
	Acquired EventKind = iota + 1
	// Renewed: the server that granted the lease extended it (unicast, T1).
	Renewed
	// Rebound: some server extended it after T2 (broadcast).
	Rebound
	// Expired: the lease ran out or a server refused it (NAK, Err says so);
	// its address and configuration must be removed.
	Expired
	// Released: the client gave the lease back on shutdown.
	Released
	// Failed: an attempt to get or keep a lease failed; informational.
	Failed
)

func (k EventKind) String() string {
	switch k {
	case Acquired:
		return "acquired"
	case Renewed:
		return "renewed"
	case Rebound:
		return "rebound"
	case Expired:
		return "expired"
	case Released:
		return "released"
	case Failed:
		return "failed"
	}

	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one change of the client's lease.
type Event struct {
	Kind  EventKind
	Lease *Lease
	Err   error
}

func (e Event) String() string {
	s := e.Kind.String()
	if e.Lease != nil {
		s += " " + e.Lease.Address.String()
	}

	if e.Err != nil {
		s += ": " + e.Err.Error()
	}

	return s
}

// defaultLeaseTime stands in for a missing option 51, which RFC 2131 makes
// mandatory in an ACK; an hour is what many servers default to.
const defaultLeaseTime = time.Hour

// leaseFromACK turns an ACK into a Lease. sent is when the request went out.
func leaseFromACK(ack *dhcpv4.DHCPv4, sent time.Time, opts *Options) (*Lease, error) {
	addr, ok := addrFrom(ack.YourIPAddr)
	if !ok || addr.IsUnspecified() {
		return nil, errors.New("ACK without a usable yiaddr")
	}

	mask := ack.SubnetMask()
	if mask == nil {
		mask = net.IP(ack.YourIPAddr).DefaultMask()
	}

	bits, size := mask.Size()
	if size != 32 {
		return nil, fmt.Errorf("ACK with a non-contiguous subnet mask %s", net.IP(mask))
	}

	l := &Lease{
		Address:  netip.PrefixFrom(addr, bits),
		DNS:      addrsFrom(ack.DNS()),
		Hostname: ack.HostName(),
		Domain:   ack.DomainName(),
		NTP:      addrsFrom(ack.NTPServers()),
		Acquired: sent,

		RouteMetric: opts.RouteMetric,
	}

	if r := ack.Router(); len(r) > 0 {
		l.Router, _ = addrFrom(r[0])
	}

	if s, ok := addrFrom(ack.ServerIdentifier()); ok {
		l.Server = s
	}

	if v := ack.Options.Get(dhcpv4.OptionInterfaceMTU); len(v) == 2 {
		l.MTU = int(v[0])<<8 | int(v[1])
	}

	for _, r := range ack.ClasslessStaticRoute() {
		dst, ok := addrFrom(r.Dest.IP)
		gw, gok := addrFrom(r.Router)
		ones, _ := r.Dest.Mask.Size()

		if !ok || !gok {
			continue
		}

		l.Routes = append(l.Routes, Route{Dst: netip.PrefixFrom(dst, ones).Masked(), Gateway: gw, Metric: opts.RouteMetric})
	}

	l.LeaseTime = ack.IPAddressLeaseTime(defaultLeaseTime)
	if l.LeaseTime <= 0 {
		l.LeaseTime = defaultLeaseTime
	}

	l.T1 = ack.IPAddressRenewalTime(l.LeaseTime / 2)
	l.T2 = ack.IPAddressRebindingTime(l.LeaseTime * 7 / 8)

	// RFC 2131 4.4.5 wants T1 < T2 < lease time; a server that sends
	// otherwise gets the defaults rather than a client that never renews.
	if l.T2 <= 0 || l.T2 >= l.LeaseTime {
		l.T2 = l.LeaseTime * 7 / 8
	}

	if l.T1 <= 0 || l.T1 >= l.T2 {
		l.T1 = l.T2 * 4 / 7
	}

	if opts.RebindAfter > 0 && opts.RebindAfter < l.LeaseTime {
		l.T2 = opts.RebindAfter
	}

	if opts.RenewAfter > 0 && opts.RenewAfter < l.T2 {
		l.T1 = opts.RenewAfter
	}

	if l.T1 > l.T2 {
		l.T1 = l.T2
	}

	return l, nil
}

func addrFrom(ip net.IP) (netip.Addr, bool) {
	ip4 := ip.To4()
	if ip4 == nil {
		return netip.Addr{}, false
	}

	return netip.AddrFrom4([4]byte(ip4)), true
}

func addrsFrom(ips []net.IP) []netip.Addr {
	var out []netip.Addr

	for _, ip := range ips {
		if a, ok := addrFrom(ip); ok {
			out = append(out, a)
		}
	}

	return out
}
