package timed

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/beevik/ntp"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

const waitLimit = 30 * time.Second

// waitStatus waits until the TimeStatus satisfies cond and returns it.
func waitStatus(t *testing.T, st *bus.Store, what string, cond func(v1alpha1.TimeStatusSpec) bool) v1alpha1.TimeStatusSpec {
	t.Helper()

	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()

	w, err := st.Watch(ctx, v1alpha1.TimeStatusPointer())
	if err != nil {
		t.Fatal(err)
	}

	for ev := range w.Events() {
		if ev.Type != bus.Created && ev.Type != bus.Updated {
			continue
		}

		spec := *ev.Resource.(*v1alpha1.TimeStatus).TypedSpec() //nolint:forcetypeassert // the only type stored there
		if cond(spec) {
			return spec
		}
	}

	t.Fatalf("timed out waiting for the time status to be %s", what)

	return v1alpha1.TimeStatusSpec{}
}

// running is a syncer run in the background.
type running struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when run returned
	err    error         // run's result, once done is closed
}

// start runs run until the test ends or stop is called.
func start(t *testing.T, run func(context.Context) error) *running {
	t.Helper()

	// Not t.Context(): that ends before cleanups run, and a cleanup must
	// see timed stop because of its own cancel.
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}

	go func() {
		r.err = run(ctx)
		close(r.done)
	}()

	t.Cleanup(func() {
		if err := r.stop(waitLimit); err != nil {
			t.Error(err)
		}
	})

	return r
}

// stop cancels the run and waits up to limit for it to return.
func (r *running) stop(limit time.Duration) error {
	r.cancel()

	select {
	case <-r.done:
		return r.err
	case <-time.After(limit):
		return fmt.Errorf("timed did not stop within %s of its context ending", limit)
	}
}

// goodResponse is a response Validate accepts, with the given offset.
func goodResponse(offset time.Duration) *ntp.Response {
	now := time.Now()

	return &ntp.Response{
		Version: 4, Stratum: 2, Leap: ntp.LeapNoWarning,
		Time: now, ReferenceTime: now.Add(-time.Minute),
		RootDelay: time.Millisecond, RootDispersion: time.Millisecond,
		ClockOffset: offset, RTT: time.Millisecond,
	}
}

// fakeClock records corrections; the tests never touch the host clock.
type fakeClock struct {
	mu         sync.Mutex
	steps      []time.Duration
	slews      []time.Duration
	stepErrors []error // returned by the first steps, in order
}

func (c *fakeClock) step(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()

	if len(c.stepErrors) > 0 {
		err := c.stepErrors[0]
		c.stepErrors = c.stepErrors[1:]

		return err
	}

	c.steps = append(c.steps, d)

	return nil
}

func (c *fakeClock) slew(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()

	c.slews = append(c.slews, d)

	return nil
}

func newTestSyncer(t *testing.T, opts Options, log io.Writer, clk clock) *syncer {
	t.Helper()

	s, err := newSyncer(opts, log, clk)
	if err != nil {
		t.Fatal(err)
	}

	// Retries at test speed; the backoff shape is the same.
	s.retryMin, s.retryMax = time.Millisecond, 4*time.Millisecond

	return s
}
