package dhcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

// NAKError is a server's refusal of a REQUEST.
type NAKError struct {
	Server  netip.Addr
	Message string // option 56, often empty
}

func (e *NAKError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("DHCPNAK from %s: %s", e.Server, e.Message)
	}

	return fmt.Sprintf("DHCPNAK from %s", e.Server)
}

func nakFrom(m *dhcpv4.DHCPv4) error {
	s, _ := addrFrom(m.ServerIdentifier())
	return &NAKError{Server: s, Message: m.Message()}
}

// acquire gets a new lease (INIT state), retrying with backoff until it
// succeeds or ctx ends. A lease still held (after a link flap) is asked for
// again, and expires meanwhile if its time comes.
func (r *runner) acquire(ctx context.Context, conn *rawConn) error {
	var bo backoff

	for {
		l, err := r.discover(ctx, conn)
		if err == nil {
			r.bind(l, Acquired)
			return nil
		}

		var se *socketError
		if ctx.Err() != nil || errors.As(err, &se) {
			return cmp.Or(ctx.Err(), err)
		}

		r.emit(Event{Kind: Failed, Lease: r.lease, Err: err})

		wait := bo.next()
		if r.lease != nil {
			wait = min(wait, r.lease.Expiry().Sub(r.opts.Now()))
		}

		if err := sleep(ctx, wait); err != nil {
			return err
		}

		r.expireIfDue()
	}
}

// discover is one DISCOVER/OFFER/REQUEST/ACK round, all broadcast from
// 0.0.0.0 as RFC 2131 4.4.1 says for a client without an address.
func (r *runner) discover(ctx context.Context, conn *rawConn) (*Lease, error) {
	mods := r.requestOptions(conn.hw, dhcpv4.MessageTypeDiscover)
	if r.lease != nil {
		// Ask for the address we had (RFC 2131 4.4.1): after a link
		// flap on the same network the server hands it back.
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(r.lease.Address.Addr().AsSlice())))
	}

	msg, err := dhcpv4.New(mods...)
	if err != nil {
		return nil, fmt.Errorf("build DISCOVER: %w", err)
	}

	offer, _, err := conn.exchange(ctx, msg, path{}, 4, func(m *dhcpv4.DHCPv4) bool {
		return m.MessageType() == dhcpv4.MessageTypeOffer && m.ServerIdentifier() != nil
	})
	if err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}

	server := offer.ServerIdentifier()

	// SELECTING: a broadcast REQUEST naming the chosen server, so that
	// the other servers that offered withdraw their offers.
	mods = append(r.requestOptions(conn.hw, dhcpv4.MessageTypeRequest),
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(offer.YourIPAddr)),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(server)))

	if msg, err = dhcpv4.New(mods...); err != nil {
		return nil, fmt.Errorf("build REQUEST: %w", err)
	}

	sent := r.opts.Now()

	ack, mac, err := conn.exchange(ctx, msg, path{}, 3, func(m *dhcpv4.DHCPv4) bool {
		t := m.MessageType()
		return (t == dhcpv4.MessageTypeAck || t == dhcpv4.MessageTypeNak) && m.ServerIdentifier().Equal(server)
	})
	if err != nil {
		return nil, fmt.Errorf("request %s from %s: %w", offer.YourIPAddr, server, err)
	}

	if ack.MessageType() == dhcpv4.MessageTypeNak {
		return nil, fmt.Errorf("request %s: %w", offer.YourIPAddr, nakFrom(ack))
	}

	l, err := leaseFromACK(ack, sent, r.opts)
	if err != nil {
		return nil, fmt.Errorf("ACK from %s: %w", server, err)
	}

	if !l.Server.IsValid() {
		l.Server, _ = addrFrom(server) // the ACK left it out; the offer had it
	}

	r.serverMAC = mac

	return l, nil
}

// minRetry is RFC 2131 4.4.5's floor on the wait between renewal (and
// rebinding) attempts.
const minRetry = 60 * time.Second

// hold keeps the lease: BOUND until T1, RENEWING until T2, REBINDING until
// expiry. It returns nil when the lease is gone (expired or NAKed: an
// Expired event has been sent) and ctx's error when ctx ends.
func (r *runner) hold(ctx context.Context, conn *rawConn) error {
	for {
		l := r.lease
		now := r.opts.Now()
		t1, t2, end := l.Acquired.Add(l.T1), l.Acquired.Add(l.T2), l.Expiry()

		var (
			kind     EventKind
			p        path
			until    time.Time
			stateEnd string
		)

		switch {
		case now.Before(t1):
			if err := sleep(ctx, t1.Sub(now)); err != nil {
				return err
			}

			continue
		case now.Before(t2):
			// RENEWING: unicast to the server that granted the lease,
			// from the leased address.
			kind, until, stateEnd = Renewed, t2, "T2"
			p = path{src: l.Address.Addr(), dst: l.Server, mac: r.serverMAC}
		case now.Before(end):
			// REBINDING: that server is gone quiet; ask any server.
			kind, until, stateEnd = Rebound, end, "expiry"
			p = path{src: l.Address.Addr()}
		default:
			r.drop(errLeaseExpired)
			return nil
		}

		// An attempt must not outlast its state: at T2 renewing gives
		// way to rebinding, at expiry rebinding to a new DISCOVER.
		actx, cancel := context.WithTimeout(ctx, until.Sub(now))
		nl, err := r.extend(actx, conn, p, kind == Renewed)
		cancel()

		var (
			nak *NAKError
			se  *socketError
		)

		switch {
		case err == nil:
			r.bind(nl, kind)
			continue
		case errors.As(err, &nak):
			r.drop(err)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &se):
			return err
		case errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("extend lease on %s: %w before %s", l.Address.Addr(), errNoReply, stateEnd)
		}

		r.emit(Event{Kind: Failed, Lease: l, Err: err})

		// Half the time left, but no less than a minute unless less is
		// left (RFC 2131 4.4.5).
		left := until.Sub(r.opts.Now())

		wait := left / 2
		if wait < minRetry {
			wait = min(minRetry, left)
		}

		if err := sleep(ctx, max(wait, 0)); err != nil {
			return err
		}
	}
}

// extend asks to extend the held lease: a REQUEST with ciaddr set and
// neither server identifier nor requested address (RFC 2131 4.3.2).
func (r *runner) extend(ctx context.Context, conn *rawConn, p path, renewing bool) (*Lease, error) {
	held := r.lease

	mods := append(r.requestOptions(conn.hw, dhcpv4.MessageTypeRequest),
		dhcpv4.WithClientIP(held.Address.Addr().AsSlice()))

	msg, err := dhcpv4.New(mods...)
	if err != nil {
		return nil, fmt.Errorf("build REQUEST: %w", err)
	}

	server := net.IP(held.Server.AsSlice())
	sent := r.opts.Now()

	ack, mac, err := conn.exchange(ctx, msg, p, 3, func(m *dhcpv4.DHCPv4) bool {
		t := m.MessageType()
		if t != dhcpv4.MessageTypeAck && t != dhcpv4.MessageTypeNak {
			return false
		}

		// While renewing only the lease's server speaks for it.
		return !renewing || m.ServerIdentifier() == nil || m.ServerIdentifier().Equal(server)
	})
	if err != nil {
		return nil, fmt.Errorf("extend lease on %s: %w", held.Address.Addr(), err)
	}

	if ack.MessageType() == dhcpv4.MessageTypeNak {
		return nil, fmt.Errorf("extend lease on %s: %w", held.Address.Addr(), nakFrom(ack))
	}

	l, err := leaseFromACK(ack, sent, r.opts)
	if err != nil {
		return nil, fmt.Errorf("ACK extending %s: %w", held.Address.Addr(), err)
	}

	if !l.Server.IsValid() {
		l.Server = held.Server
	}

	if mac != nil {
		r.serverMAC = mac
	}

	return l, nil
}

// release gives the held lease back (RFC 2131 4.4.6): one unicast RELEASE,
// unanswered by design. It runs after Run's context ended, so the Released
// event waits only briefly for a reader.
func (r *runner) release(conn *rawConn) {
	l := r.lease
	if l == nil || !r.opts.Now().Before(l.Expiry()) {
		return
	}

	mods := []dhcpv4.Modifier{
		dhcpv4.WithHwAddr(conn.hw),
		dhcpv4.WithMessageType(dhcpv4.MessageTypeRelease),
		dhcpv4.WithClientIP(l.Address.Addr().AsSlice()),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(l.Server.AsSlice())),
	}

	// The server finds the lease by the identifier it was given.
	if id := r.clientID(conn.hw); id != nil {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptClientIdentifier(id)))
	}

	msg, err := dhcpv4.New(mods...)
	if err == nil {
		err = conn.send(msg.ToBytes(), path{src: l.Address.Addr(), dst: l.Server, mac: r.serverMAC})
	}

	if err != nil {
		r.opts.Logf("dhcp: %s: release %s: %v", r.opts.Interface, l.Address, err)
		return
	}

	r.lease = nil
	ev := Event{Kind: Released, Lease: l}
	r.opts.Logf("dhcp: %s: %s", r.opts.Interface, ev)

	t := time.NewTimer(time.Second)
	defer t.Stop()

	select {
	case r.updates <- ev:
	case <-t.C:
	}
}
