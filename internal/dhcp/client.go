// Package dhcp is a DHCPv4 client that holds a lease on one interface for
// as long as it runs: DISCOVER/OFFER/REQUEST/ACK, renewal at T1 (unicast to
// the server), rebinding at T2 (broadcast), a fresh start when the lease
// expires or a server NAKs it, a fresh acquisition whenever the link comes
// back up, and a RELEASE on shutdown. It reports every change as an Event;
// it configures nothing itself: networkd turns leases into specs.
//
// # Network namespaces
//
// Run opens its sockets (an rtnetlink subscription at start, then an
// AF_PACKET socket each time the link comes up) on the goroutine that
// called it, and a socket belongs to the network namespace of the OS thread
// that opened it. So Run serves the interface of the namespace its calling
// thread is in:
//
//   - In the host namespace (networkd's normal case) any goroutine will do,
//     since every thread of the process is there.
//   - For another namespace, call Run from a goroutine that has joined it
//     and is locked to its thread for the whole call, e.g.
//     testnet.InNS(ns, func() error { return c.Run(ctx, events) }).
//
// Goroutines that Run starts only use sockets already open, so they may run
// on any thread.
//
// Renewal replies are unicast by the server to the leased address, so they
// only arrive once the caller has configured that address on the interface
// (as networkd does on Acquired); until then renewal times out and the
// client falls back to rebinding and, at expiry, to a new DISCOVER.
package dhcp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// Options configures a Client.
type Options struct {
	// Interface is the link to hold a lease on (required).
	Interface string
	// Hostname, if set, is sent as option 12 so the server may register it.
	Hostname string
	// RouteMetric is stamped on the lease's routes (Lease.RouteMetric).
	RouteMetric int
	// ClientID, if set, is sent as option 61 (RFC 2132 9.14), by which a
	// server tells clients apart instead of by their hardware address.
	// ClientIDFromMAC sends the Ethernet type and the link's hardware
	// address instead, as Talos's clientIdentifier: mac does.
	ClientID        []byte
	ClientIDFromMAC bool
	// Logf receives diagnostics; nil discards them.
	Logf func(format string, args ...any)
	// Now stamps Lease.Acquired and tells when T1, T2 and expiry are
	// due; nil is time.Now. Waits run on real timers, so Now must advance
	// with real time (it may be offset, e.g. a clock synced later).
	Now func() time.Time

	// RenewAfter and RebindAfter, if non-zero, replace the server's T1
	// and T2 (kept below T2 and the lease time). They exist for tests:
	// dnsmasq's shortest lease is two minutes, so its T1 is a minute, too
	// long to wait for in a test of renewal.
	RenewAfter, RebindAfter time.Duration
}

// Client holds a DHCPv4 lease on one interface. Create it with New; run
// at most one Run at a time per interface.
type Client struct {
	opts Options
}

// New checks opts and returns a client; nothing happens until Run.
func New(opts Options) (*Client, error) {
	if opts.Interface == "" {
		return nil, errors.New("dhcp: no interface")
	}

	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}

	if opts.Now == nil {
		opts.Now = time.Now
	}

	return &Client{opts: opts}, nil
}

var (
	errLinkChanged = errors.New("link state changed")
	errWatchLost   = errors.New("link watch lost")
)

// Run acquires and keeps a lease until ctx ends, sending every change to
// updates; it then releases the lease (if the link is up to send it) and
// returns nil. Sends block until received or ctx ends, except the final
// Released, which waits at most a second. Run never closes updates. It only
// returns an error when it cannot watch the link at all. See the package
// documentation for which network namespace it works in.
func (c *Client) Run(ctx context.Context, updates chan<- Event) error {
	if updates == nil {
		return errors.New("dhcp: nil updates channel")
	}

	r := &runner{opts: &c.opts, ctx: ctx, updates: updates}

	w, err := watchLink(c.opts.Interface, c.opts.Logf)
	if err != nil {
		return fmt.Errorf("dhcp: %s: %w", c.opts.Interface, err)
	}

	defer func() { w.stop() }()

	var (
		bo, wbo backoff
		watched = time.Now()
	)

	for ctx.Err() == nil {
		select {
		case <-w.lost:
			// Resubscribing here, not in the watch's goroutine, keeps the
			// new socket in Run's namespace. The pause keeps a socket that
			// keeps failing from turning this into a busy loop.
			w.stop()

			if time.Since(watched) > time.Minute {
				wbo = backoff{}
			}

			if r.waitFor(nil, nil, wbo.next()); ctx.Err() != nil {
				return nil
			}

			if w, err = watchLink(c.opts.Interface, c.opts.Logf); err != nil {
				return fmt.Errorf("dhcp: %s: %w", c.opts.Interface, err)
			}

			watched = time.Now()
		default:
		}

		up, changed := w.state()
		if !up {
			r.waitFor(changed, w.lost, 0)
			continue
		}

		sess, cancel := context.WithCancelCause(ctx)
		lost := w.lost

		go func() {
			select {
			case <-changed:
				cancel(errLinkChanged)
			case <-lost:
				cancel(errWatchLost)
			case <-sess.Done():
			}
		}()

		err := r.session(sess)

		cancel(nil)

		if ctx.Err() != nil || context.Cause(sess) == errLinkChanged || context.Cause(sess) == errWatchLost {
			bo = backoff{}
			continue
		}

		// The socket could not be opened or broke: try again later.
		c.opts.Logf("dhcp: %s: %v", c.opts.Interface, err)
		r.emit(Event{Kind: Failed, Err: err})
		r.waitFor(changed, w.lost, bo.next())
	}

	return nil
}

// runner is the state of one Run.
type runner struct {
	opts    *Options
	ctx     context.Context // Run's: events are delivered until it ends
	updates chan<- Event

	lease     *Lease // held now, nil if none
	serverMAC []byte // link-layer source of the last ACK, for unicast
}

// session runs the lease state machine over one socket, while the link
// stays up; it returns when sess ends or the socket fails.
func (r *runner) session(sess context.Context) error {
	conn, err := openRaw(r.opts.Interface)
	if err != nil {
		return err
	}
	defer conn.Close()

	for {
		if err = r.acquire(sess, conn); err == nil {
			err = r.hold(sess, conn)
		}

		if r.ctx.Err() != nil {
			r.release(conn)
			return err
		}

		if err != nil {
			return err
		}
	}
}

// emit delivers ev unless Run's context has ended.
func (r *runner) emit(ev Event) {
	r.opts.Logf("dhcp: %s: %s", r.opts.Interface, ev)

	select {
	case r.updates <- ev:
	case <-r.ctx.Done():
	}
}

func (r *runner) bind(l *Lease, kind EventKind) {
	r.lease = l
	r.emit(Event{Kind: kind, Lease: l})
}

func (r *runner) drop(err error) {
	l := r.lease
	r.lease, r.serverMAC = nil, nil
	r.emit(Event{Kind: Expired, Lease: l, Err: err})
}

var errLeaseExpired = errors.New("lease expired")

// expireIfDue drops the held lease once its time is up.
func (r *runner) expireIfDue() {
	if r.lease != nil && !r.opts.Now().Before(r.lease.Expiry()) {
		r.drop(errLeaseExpired)
	}
}

// waitFor blocks until a or b is closed, d passes (0: forever) or Run's
// context ends, expiring the held lease if its time comes first: while the
// link is down nobody else will.
func (r *runner) waitFor(a, b <-chan struct{}, d time.Duration) {
	for {
		var (
			timer   *time.Timer
			expired <-chan time.Time
		)

		if r.lease != nil {
			timer = time.NewTimer(r.lease.Expiry().Sub(r.opts.Now()))
			expired = timer.C
		}

		var after <-chan time.Time
		if d > 0 {
			after = time.After(d)
		}

		select {
		case <-a:
		case <-b:
		case <-after:
		case <-r.ctx.Done():
		case <-expired:
			r.expireIfDue()
			continue
		}

		if timer != nil {
			timer.Stop()
		}

		return
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()

	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff spaces out failed attempts: 1 s doubling to 32 s, each drawn
// from the upper half of its range so that clients restarted together
// drift apart.
type backoff struct{ n int }

func (b *backoff) next() time.Duration {
	d := time.Second << min(b.n, 5)
	b.n++

	return d/2 + rand.N(d/2)
}

// requestOptions are the options every client message carries.
func (r *runner) requestOptions(hw []byte, typ dhcpv4.MessageType) []dhcpv4.Modifier {
	mods := []dhcpv4.Modifier{
		dhcpv4.WithHwAddr(hw),
		dhcpv4.WithMessageType(typ),
		dhcpv4.WithOption(dhcpv4.OptMaxMessageSize(1500)),
		// Servers (dnsmasq included) mostly send only what is asked for.
		dhcpv4.WithRequestedOptions(
			dhcpv4.OptionSubnetMask,
			dhcpv4.OptionRouter,
			dhcpv4.OptionDomainNameServer,
			dhcpv4.OptionHostName,
			dhcpv4.OptionDomainName,
			dhcpv4.OptionInterfaceMTU,
			dhcpv4.OptionNTPServers,
			dhcpv4.OptionIPAddressLeaseTime,
			dhcpv4.OptionServerIdentifier,
			dhcpv4.OptionRenewTimeValue,
			dhcpv4.OptionRebindingTimeValue,
			dhcpv4.OptionClasslessStaticRoute,
		),
	}

	if r.opts.Hostname != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptHostName(r.opts.Hostname)))
	}

	if id := r.clientID(hw); id != nil {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptClientIdentifier(id)))
	}

	return mods
}

// clientID is option 61's value for a link with hardware address hw, nil
// when none is sent.
func (r *runner) clientID(hw []byte) []byte {
	switch {
	case r.opts.ClientIDFromMAC:
		return append([]byte{byte(iana.HWTypeEthernet)}, hw...)
	case len(r.opts.ClientID) > 0:
		return r.opts.ClientID
	}

	return nil
}
