package timed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

func TestSyncWithChrony(t *testing.T) {
	server := startChrony(t)
	dead := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeUDPPort(t)))

	for _, tc := range []struct {
		name    string
		servers []string
	}{
		{"one live server", []string{server}},
		{"a dead server, then a live one", []string{dead, server}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := bus.NewStore(bus.StoreOptions{})

			// Watch before starting, to see the status go from unsynced
			// to synced.
			w, err := st.Watch(t.Context(), v1alpha1.TimeStatusPointer())
			if err != nil {
				t.Fatal(err)
			}

			var log lockedBuffer

			start(t, func(ctx context.Context) error {
				return Run(ctx, Options{Servers: tc.servers, Store: st}, &log)
			})

			var seen []v1alpha1.TimeStatusSpec

			timeout := time.After(waitLimit)

			for len(seen) == 0 || !seen[len(seen)-1].Synced {
				select {
				case ev := <-w.Events():
					if ev.Type == bus.Created || ev.Type == bus.Updated {
						seen = append(seen, *ev.Resource.(*v1alpha1.TimeStatus).TypedSpec()) //nolint:forcetypeassert // only type stored
					}
				case <-timeout:
					t.Fatalf("not synced; statuses %+v, log:\n%s", seen, log.String())
				}
			}

			want := []v1alpha1.TimeStatusSpec{{}, {Synced: true}}
			if fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Errorf("statuses = %+v, want %+v", seen, want)
			}

			res, err := st.Get(t.Context(), v1alpha1.TimeStatusPointer())
			if err != nil {
				t.Fatal(err)
			}

			if owner := res.Metadata().Owner; owner != Owner {
				t.Errorf("owner = %q, want %q", owner, Owner)
			}

			logged := log.String()
			good := strings.Index(logged, "time server "+server+": offset ")

			if good < 0 || !strings.Contains(logged, "stratum 8") {
				t.Errorf("log does not show chrony's answer:\n%s", logged)
			}

			if len(tc.servers) > 1 {
				bad := strings.Index(logged, "time server "+dead+": ")
				if bad < 0 || bad > good || !strings.Contains(logged[bad:good], "refused") {
					t.Errorf("log does not show the dead server refused before the live one answered:\n%s", logged)
				}
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	st := bus.NewStore(bus.StoreOptions{})

	for _, tc := range []struct {
		opts Options
		err  string
	}{
		{Options{Store: st}, "timed: no time servers configured: set machine.time.servers (or machine.time.disabled)"},
		{Options{Store: st, Servers: []string{}}, "no time servers configured"},
		{Options{Servers: []string{"127.0.0.1"}}, "timed: no resource store"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		err := Run(ctx, tc.opts, nil)

		cancel()

		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Run(%+v) = %v, want %q", tc.opts, err, tc.err)
		}
	}
}

// A query in flight must not hold up shutdown: the default one waits up
// to QueryTimeout for a server that never answers.
func TestCancelReturnsPromptly(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the options and a channel closed once a query is
		// in flight.
		setup func(t *testing.T) (Options, <-chan struct{})
	}{
		{"default query to a silent server", func(t *testing.T) (Options, <-chan struct{}) {
			silent, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}

			t.Cleanup(func() { silent.Close() })

			asked := make(chan struct{})

			go func() {
				buf := make([]byte, 512)
				if _, _, err := silent.ReadFrom(buf); err == nil {
					close(asked)
				}
			}()

			return Options{Servers: []string{silent.LocalAddr().String()}}, asked
		}},
		{"a query function that never returns", func(t *testing.T) (Options, <-chan struct{}) {
			asked := make(chan struct{})
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })

			var once sync.Once

			q := func(string) (*ntp.Response, error) {
				once.Do(func() { close(asked) })
				<-release

				return nil, errors.New("released")
			}

			return Options{Servers: []string{"stuck"}, Query: q}, asked
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, asked := tc.setup(t)
			opts.Store = bus.NewStore(bus.StoreOptions{})

			r := start(t, func(ctx context.Context) error { return Run(ctx, opts, nil) })

			select {
			case <-asked:
			case <-time.After(waitLimit):
				t.Fatal("no query was made")
			}

			if err := r.stop(QueryTimeout / 2); err != nil {
				t.Errorf("Run after cancel: %v", err)
			}
		})
	}
}

func TestInvalidAnswersFallThrough(t *testing.T) {
	kod := goodResponse(0)
	kod.Stratum, kod.KissCode = 0, "RATE"

	unsynced := goodResponse(0)
	unsynced.Leap = ntp.LeapNotInSync

	answers := map[string]*ntp.Response{"kod": kod, "unsynced": unsynced, "good": goodResponse(time.Second)}

	var log lockedBuffer

	st := bus.NewStore(bus.StoreOptions{})
	opts := Options{
		Servers: []string{"kod", "unsynced", "nil", "good"},
		Store:   st,
		Query:   func(s string) (*ntp.Response, error) { return answers[s], nil },
	}

	s := newTestSyncer(t, opts, &log, &fakeClock{})
	start(t, s.run)

	waitStatus(t, st, "synced", func(s v1alpha1.TimeStatusSpec) bool { return s.Synced })

	for _, want := range []string{
		"time server kod: " + ntp.ErrKissOfDeath.Error(),
		"time server unsynced: " + ntp.ErrInvalidLeapSecond.Error(),
		"time server nil: no response",
		"time server good: offset 1s",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

func TestClockCorrection(t *testing.T) {
	for _, tc := range []struct {
		name         string
		setClock     bool
		offsets      []time.Duration
		stepErrors   []error
		steps, slews []time.Duration
		epoch        int
		log          string
	}{
		{
			name: "SetClock steps large offsets and slews small ones", setClock: true,
			offsets: []time.Duration{5 * time.Second, 10 * time.Millisecond, -3 * time.Second, -stepThreshold},
			steps:   []time.Duration{5 * time.Second, -3 * time.Second, -stepThreshold},
			slews:   []time.Duration{10 * time.Millisecond},
			epoch:   3,
			log:     "stepped the clock by -3s",
		},
		{
			name:    "without SetClock the clock is left alone",
			offsets: []time.Duration{5 * time.Second, 10 * time.Millisecond},
			log:     "offset 5s",
		},
		{
			name: "a failed step is retried", setClock: true,
			offsets:    []time.Duration{time.Hour, time.Hour},
			stepErrors: []error{unix.EPERM},
			steps:      []time.Duration{time.Hour},
			epoch:      1,
			log:        "correct the clock by 1h0m0s: operation not permitted",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				calls int
			)

			exhausted := make(chan struct{})

			query := func(string) (*ntp.Response, error) {
				mu.Lock()
				defer mu.Unlock()

				if calls == len(tc.offsets) {
					close(exhausted)
				}

				calls++

				if calls > len(tc.offsets) {
					return nil, errors.New("no more answers")
				}

				return goodResponse(tc.offsets[calls-1]), nil
			}

			var log lockedBuffer

			st := bus.NewStore(bus.StoreOptions{})
			clk := &fakeClock{stepErrors: tc.stepErrors}
			s := newTestSyncer(t, Options{Servers: []string{"s"}, Store: st, SetClock: tc.setClock, Interval: time.Millisecond, Query: query}, &log, clk)
			r := start(t, s.run)

			select {
			case <-exhausted:
			case <-time.After(waitLimit):
				t.Fatalf("the scripted answers were not all used; log:\n%s", log.String())
			}

			if err := r.stop(waitLimit); err != nil {
				t.Fatal(err)
			}

			clk.mu.Lock()
			defer clk.mu.Unlock()

			if fmt.Sprint(clk.steps) != fmt.Sprint(tc.steps) || fmt.Sprint(clk.slews) != fmt.Sprint(tc.slews) {
				t.Errorf("steps %v slews %v, want steps %v slews %v", clk.steps, clk.slews, tc.steps, tc.slews)
			}

			got := waitStatus(t, st, "final", func(v1alpha1.TimeStatusSpec) bool { return true })
			if want := (v1alpha1.TimeStatusSpec{Synced: true, Epoch: tc.epoch}); got != want {
				t.Errorf("status = %+v, want %+v", got, want)
			}

			if !strings.Contains(log.String(), tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, log.String())
			}
		})
	}
}

func TestRetryBacksOff(t *testing.T) {
	var (
		mu    sync.Mutex
		calls int
	)

	query := func(string) (*ntp.Response, error) {
		mu.Lock()
		defer mu.Unlock()

		calls++
		if calls <= 4 {
			return nil, fmt.Errorf("down %d", calls)
		}

		return goodResponse(0), nil
	}

	var log lockedBuffer

	st := bus.NewStore(bus.StoreOptions{})
	s := newTestSyncer(t, Options{Servers: []string{"s"}, Store: st, Query: query}, &log, &fakeClock{})
	start(t, s.run)

	waitStatus(t, st, "synced", func(s v1alpha1.TimeStatusSpec) bool { return s.Synced })

	var retries []string

	for line := range strings.Lines(log.String()) {
		if _, after, ok := strings.Cut(line, "retrying in "); ok {
			retries = append(retries, strings.TrimSpace(after))
		}
	}

	if want := []string{"1ms", "2ms", "4ms", "4ms"}; fmt.Sprint(retries) != fmt.Sprint(want) {
		t.Errorf("retry delays = %v, want %v; log:\n%s", retries, want, log.String())
	}
}

func TestDisabled(t *testing.T) {
	st := bus.NewStore(bus.StoreOptions{})

	queried := make(chan string, 1)
	opts := Options{Store: st, Disabled: true, Query: func(s string) (*ntp.Response, error) {
		queried <- s
		return goodResponse(0), nil
	}}

	r := start(t, func(ctx context.Context) error { return Run(ctx, opts, nil) })

	got := waitStatus(t, st, "synced with sync disabled", func(s v1alpha1.TimeStatusSpec) bool { return s.SyncDisabled })
	if !got.Synced {
		t.Errorf("status = %+v, want synced", got)
	}

	if err := r.stop(waitLimit); err != nil {
		t.Errorf("Run = %v", err)
	}

	select {
	case s := <-queried:
		t.Errorf("server %q was queried with sync disabled", s)
	default:
	}

	// Enabling sync again drops the borrowed Synced until a server answers.
	fail := func(string) (*ntp.Response, error) { return nil, errors.New("down") }
	s := newTestSyncer(t, Options{Store: st, Servers: []string{"s"}, Query: fail}, nil, &fakeClock{})
	start(t, s.run)

	waitStatus(t, st, "unsynced with sync enabled", func(s v1alpha1.TimeStatusSpec) bool { return !s.Synced && !s.SyncDisabled })
}

func TestBootTimeout(t *testing.T) {
	var log lockedBuffer

	st := bus.NewStore(bus.StoreOptions{})
	fail := func(string) (*ntp.Response, error) { return nil, errors.New("unreachable") }
	s := newTestSyncer(t, Options{Store: st, Servers: []string{"s"}, Query: fail, BootTimeout: 20 * time.Millisecond}, &log, &fakeClock{})
	start(t, s.run)

	got := waitStatus(t, st, "synced after the boot timeout", func(s v1alpha1.TimeStatusSpec) bool { return s.Synced })
	if got != (v1alpha1.TimeStatusSpec{Synced: true}) {
		t.Errorf("status = %+v", got)
	}

	if !strings.Contains(log.String(), "no time server answered within the boot timeout (20ms)") {
		t.Errorf("log:\n%s", log.String())
	}
}

func TestStatusOwnedByAnotherWriter(t *testing.T) {
	st := bus.NewStore(bus.StoreOptions{})
	if err := st.Create(t.Context(), v1alpha1.NewTimeStatus(v1alpha1.TimeStatusSpec{}), bus.WithOwner("someone")); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()

	err := Run(ctx, Options{Store: st, Servers: []string{"s"}}, nil)
	if !errors.Is(err, bus.ErrOwnerConflict) || !strings.Contains(err.Error(), "timed: publish time status") {
		t.Errorf("Run = %v, want an owner conflict", err)
	}
}

func TestDefinition(t *testing.T) {
	reg := bus.NewRegistry()
	for _, d := range v1alpha1.Definitions {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}

	for _, name := range []string{"timestatus", "TimeStatuses", "timestatuses", v1alpha1.TimeStatusType} {
		d, err := reg.Lookup(name)
		if err != nil || d.Type != v1alpha1.TimeStatusType {
			t.Errorf("Lookup(%q) = %v, %v", name, d.Type, err)
		}
	}
}
