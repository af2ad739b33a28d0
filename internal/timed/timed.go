// Package timed is the timed service: it asks NTP servers for the time,
// corrects the clock on metal and publishes TimeStatus on the bus.
package timed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/beevik/ntp"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

const (
	// DefaultInterval is NTP's default maximum poll interval (2^10 s):
	// a clock drifting 100 ppm, common for VMs, moves ~100 ms in that
	// time, which stays under the step threshold, so it is only slewed.
	DefaultInterval = 1024 * time.Second

	// QueryTimeout bounds one server's answer.
	QueryTimeout = 5 * time.Second

	// Retries after a failed round start fast, because boot waits for the
	// first sync, and back off to NTP's minimum poll interval (2^6 s) so
	// that a node without a reachable server does not flood the network.
	retryMin = time.Second
	retryMax = 64 * time.Second
)

// Options configure Run.
type Options struct {
	// Servers are asked in order until one answers well ("host",
	// "host:port" or "[v6]:port"). At least one is required: the Talos
	// default, time.cloudflare.com, is useless offline.
	Servers []string
	// SetClock corrects the system clock; only on metal, where talosbox
	// owns the clock.
	SetClock bool
	// Store receives the TimeStatus resource.
	Store *bus.Store
	// Interval between syncs after a good one; DefaultInterval if zero.
	Interval time.Duration
	// Query asks one server; beevik/ntp by default.
	Query func(server string) (*ntp.Response, error)
	// Disabled (machine.time.disabled) publishes the time as synced, with
	// SyncDisabled set, and asks no server.
	Disabled bool
	// BootTimeout (machine.time.bootTimeout), when set, publishes the time
	// as synced once it passes without a good answer, so that boot goes on;
	// syncing goes on in the background.
	BootTimeout time.Duration
}

// Run is the service body: it syncs until ctx ends and then returns nil.
// It returns an error only for a configuration it cannot run with or a
// bus write that fails.
func Run(ctx context.Context, opts Options, log io.Writer) error {
	s, err := newSyncer(opts, log, systemClock{})
	if err != nil {
		return err
	}

	return s.run(ctx)
}

type syncer struct {
	opts     Options
	log      io.Writer
	clock    clock
	retryMin time.Duration
	retryMax time.Duration
}

func newSyncer(opts Options, log io.Writer, clk clock) (*syncer, error) {
	if opts.Store == nil {
		return nil, errors.New("timed: no resource store")
	}

	if len(opts.Servers) == 0 && !opts.Disabled {
		return nil, errors.New("timed: no time servers configured: set machine.time.servers (or machine.time.disabled)")
	}

	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}

	if log == nil {
		log = io.Discard
	}

	return &syncer{opts: opts, log: log, clock: clk, retryMin: retryMin, retryMax: min(retryMax, opts.Interval)}, nil
}

func (s *syncer) logf(format string, args ...any) {
	fmt.Fprintf(s.log, format+"\n", args...)
}

func (s *syncer) run(ctx context.Context) error {
	if s.opts.Disabled {
		s.logf("time sync is disabled by machine.time.disabled")

		err := s.publish(ctx, func(st *v1alpha1.TimeStatusSpec) {
			st.Synced, st.SyncDisabled = true, true
		})

		if err == nil {
			<-ctx.Done()
		}

		return s.stopped(ctx, err)
	}

	// A restart keeps Synced: the clock did not lose its sync because the
	// service restarted. Only a status left by disabled sync is reset.
	err := s.publish(ctx, func(st *v1alpha1.TimeStatusSpec) {
		if st.SyncDisabled {
			st.Synced, st.SyncDisabled = false, false
		}
	})
	if err != nil {
		return s.stopped(ctx, err)
	}

	var bootTimeout <-chan time.Time

	if s.opts.BootTimeout > 0 {
		t := time.NewTimer(s.opts.BootTimeout)
		defer t.Stop()

		bootTimeout = t.C
	}

	next := time.NewTimer(0)
	defer next.Stop()

	backoff := s.retryMin

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-bootTimeout:
			bootTimeout = nil

			s.logf("no time server answered within the boot timeout (%s): reporting the time as synced so that boot goes on", s.opts.BootTimeout)

			if err := s.publish(ctx, func(st *v1alpha1.TimeStatusSpec) { st.Synced = true }); err != nil {
				return s.stopped(ctx, err)
			}

			continue
		case <-next.C:
		}

		synced, err := s.syncOnce(ctx)
		if err != nil || ctx.Err() != nil {
			return s.stopped(ctx, err)
		}

		if synced {
			bootTimeout = nil
			backoff = s.retryMin

			next.Reset(s.opts.Interval)

			continue
		}

		s.logf("time sync failed; retrying in %s", backoff)
		next.Reset(backoff)
		backoff = min(2*backoff, s.retryMax)
	}
}

// stopped turns the error of a step cut short by shutdown into a clean
// stop, and keeps real errors.
func (s *syncer) stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}

	return err
}

// syncOnce asks the servers in order and applies the first good answer.
// It reports whether the clock is in sync; the error is for bus failures.
func (s *syncer) syncOnce(ctx context.Context) (bool, error) {
	for _, server := range s.opts.Servers {
		resp, err := s.query(ctx, server)
		if err == nil {
			err = resp.Validate()
		}

		if ctx.Err() != nil {
			return false, nil
		}

		if err != nil {
			s.logf("time server %s: %v", server, err)
			continue
		}

		s.logf("time server %s: offset %s, round trip %s, stratum %d", server, resp.ClockOffset, resp.RTT, resp.Stratum)

		stepped, err := s.correct(resp.ClockOffset)
		if err != nil {
			// Other servers would give the same offset: the failure is
			// ours (no CAP_SYS_TIME, say), so wait and try again.
			s.logf("correct the clock by %s: %v", resp.ClockOffset, err)

			return false, nil
		}

		return true, s.publish(ctx, func(st *v1alpha1.TimeStatusSpec) {
			st.Synced = true
			if stepped {
				st.Epoch++
			}
		})
	}

	return false, nil
}

// correct applies the offset when SetClock is on; it reports a step.
func (s *syncer) correct(offset time.Duration) (bool, error) {
	if !s.opts.SetClock {
		return false, nil
	}

	if offset.Abs() < stepThreshold {
		return false, s.clock.slew(offset)
	}

	if err := s.clock.step(offset); err != nil {
		return false, err
	}

	s.logf("stepped the clock by %s", offset)

	return true, nil
}

// query asks one server, giving up as soon as ctx ends even when a
// custom Query does not: its goroutine then finishes on its own.
func (s *syncer) query(ctx context.Context, server string) (*ntp.Response, error) {
	q := s.opts.Query
	if q == nil {
		q = func(server string) (*ntp.Response, error) { return defaultQuery(ctx, server) }
	}

	type result struct {
		resp *ntp.Response
		err  error
	}

	ch := make(chan result, 1)

	go func() {
		resp, err := q(server)
		ch <- result{resp, err}
	}()

	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.err == nil && r.resp == nil {
			r.err = errors.New("no response")
		}

		return r.resp, r.err
	}
}

// defaultQuery is an NTPv4 query whose name lookup and socket end with
// ctx, so that shutdown leaves no query waiting out its timeout.
func defaultQuery(ctx context.Context, server string) (*ntp.Response, error) {
	if strings.HasPrefix(server, "nts://") {
		return nil, errors.New("NTS servers are not supported")
	}

	var stop func() bool

	defer func() {
		if stop != nil {
			stop()
		}
	}()

	return ntp.QueryWithOptions(server, ntp.QueryOptions{
		Timeout: QueryTimeout,
		Dialer: func(_, remote string) (net.Conn, error) {
			var d net.Dialer

			c, err := d.DialContext(ctx, "udp", remote)
			if err != nil {
				return nil, err
			}

			stop = context.AfterFunc(ctx, func() { c.Close() })

			return c, nil
		},
	})
}

// publish changes the TimeStatus, creating it if needed.
func (s *syncer) publish(ctx context.Context, fn func(*v1alpha1.TimeStatusSpec)) error {
	_, err := s.opts.Store.Modify(ctx, v1alpha1.NewTimeStatus(v1alpha1.TimeStatusSpec{}), func(r bus.Resource) error {
		st, ok := r.(*v1alpha1.TimeStatus)
		if !ok {
			return fmt.Errorf("%s is stored as %T", v1alpha1.TimeStatusPointer(), r)
		}

		fn(st.TypedSpec())

		return nil
	}, bus.WithOwner(Owner))
	if err != nil {
		return fmt.Errorf("timed: publish time status: %w", err)
	}

	return nil
}
