package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// switchable is a health check whose result the test sets.
type switchable struct{ err atomic.Pointer[error] }

func (s *switchable) set(err error) { s.err.Store(&err) }

func (s *switchable) check(context.Context) error { return *s.err.Load() }

func fastHealth(fn func(context.Context) error) *supervisor.HealthCheck {
	return &supervisor.HealthCheck{Func: fn, InitialDelay: time.Millisecond, Period: 2 * time.Millisecond, Timeout: time.Second}
}

func TestHealthTransitions(t *testing.T) {
	h := newHarness(t, nil)

	var hc switchable

	hc.set(errors.New("not yet"))

	h.load(t,
		supervisor.Service{ID: "apid", Runner: blocker(), Health: fastHealth(hc.check)},
		supervisor.Service{ID: "user", DependsOn: []string{"apid"}, Runner: blocker()},
	)
	h.start(t, "apid", "user")

	h.rec.waitEvent(t, "apid", supervisor.Running, "Health check failed: not yet")

	if st, _ := h.sup.Status("user"); st.State != supervisor.Waiting {
		t.Fatalf("dependent of an unhealthy service is %s, want Waiting", st.State)
	}

	hc.set(nil)
	h.rec.waitEvent(t, "apid", supervisor.Running, "Health check successful")
	h.rec.waitState(t, "user", supervisor.Running)

	hc.set(errors.New("boom"))
	h.rec.waitEvent(t, "apid", supervisor.Running, "Health check failed: boom")

	st, _ := h.sup.Status("apid")
	if st.Health.Healthy || st.Health.Unknown || st.Health.LastMessage != "boom" || st.Health.LastChange.IsZero() {
		t.Fatalf("health while failing: %+v", st.Health)
	}

	hc.set(nil)
	h.rec.wait(t, "recovery", func(evs []recorded) bool {
		return len(healthEvents(evs, "apid")) == 4
	})

	evs, _ := h.rec.snapshot()
	equalLines(t, "health events", healthEvents(evs, "apid"), []string{
		"Health check failed: not yet",
		"Health check successful",
		"Health check failed: boom",
		"Health check successful",
	})

	// The dependent waited for the first successful check.
	okAt := slices.IndexFunc(evs, func(e recorded) bool { return e.Event.Message == "Health check successful" })
	userAt := slices.IndexFunc(evs, func(e recorded) bool { return e.ID == "user" && e.Event.State == supervisor.Running })

	if userAt < okAt {
		t.Fatalf("user started before apid was healthy:\n%s", dump(evs))
	}

	res, err := bus.GetAs[*v1alpha1.Service](t.Context(), h.store, v1alpha1.ServicePointer("apid"))
	if err != nil {
		t.Fatal(err)
	}

	if spec := res.TypedSpec(); !spec.Healthy || spec.Unknown || spec.LastMessage != "Health check successful" {
		t.Fatalf("resource: %+v", spec)
	}
}

func healthEvents(evs []recorded, id string) []string {
	var out []string

	for _, e := range evs {
		if e.ID == id && strings.HasPrefix(e.Event.Message, "Health check") {
			out = append(out, e.Event.Message)
		}
	}

	return out
}

func TestHealthCheckFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(context.Context) error
		want string
	}{
		{"timeout", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, "Health check failed: context deadline exceeded"},
		{"slow success", func(ctx context.Context) error { <-ctx.Done(); return nil }, "Health check failed: health check took longer than 5ms"},
		{"panic", func(context.Context) error { panic("oops") }, "Health check failed: panic: oops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)

			hc := fastHealth(tc.fn)
			hc.Timeout = 5 * time.Millisecond

			h.load(t, supervisor.Service{ID: "svc", Runner: blocker(), Health: hc})
			h.start(t, "svc")
			h.rec.waitEvent(t, "svc", supervisor.Running, tc.want)
		})
	}
}

func TestHealthIsUnknownUntilChecked(t *testing.T) {
	h := newHarness(t, nil)

	hc := &supervisor.HealthCheck{Func: func(context.Context) error { return nil }, InitialDelay: time.Hour}

	h.load(t, supervisor.Service{ID: "svc", Runner: blocker(), Health: hc})
	h.start(t, "svc")
	h.rec.waitState(t, "svc", supervisor.Running)

	st, _ := h.sup.Status("svc")
	if !st.Health.Unknown {
		t.Fatalf("health before the first check: %+v", st.Health)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()

	if err := h.sup.WaitUp(ctx, "svc"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitUp on an unchecked service: %v", err)
	}
}

func TestPanicFailsServiceOnly(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t, supervisor.Service{ID: "crash", Restart: supervisor.Once, Runner: supervisor.GoroutineRunner(func(_ context.Context, log io.Writer) error {
		fmt.Fprintln(log, "about to panic")
		panic("boom")
	})})
	h.start(t, "crash")
	h.rec.waitEvent(t, "crash", supervisor.Failed, "Failed running service: panic: boom")

	ring, err := h.sup.Logs("crash")
	if err != nil {
		t.Fatal(err)
	}

	logs := string(ring.Bytes())
	for _, want := range []string{"about to panic\n", "panic: boom\n", "goroutine ", "health_test.go"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestWaitUpReturnsAfterTheResourceSaysHealthy: whoever WaitUp wakes
// reads the Services resources next (the boot's services line, health);
// they must already say healthy. Many services widen the window in which
// a wake-up before the store would show.
func TestWaitUpReturnsAfterTheResourceSaysHealthy(t *testing.T) {
	h := newHarness(t, nil)

	for i := range 40 {
		id := fmt.Sprintf("svc%d", i)
		hc := &supervisor.HealthCheck{Func: func(context.Context) error { return nil }, Period: time.Hour}

		h.load(t, supervisor.Service{ID: id, Runner: blocker(), Health: hc})
		h.start(t, id)

		if err := h.sup.WaitUp(ctxTimeout(t), id); err != nil {
			t.Fatal(err)
		}

		res, err := bus.GetAs[*v1alpha1.Service](t.Context(), h.store, v1alpha1.ServicePointer(id))
		if err != nil {
			t.Fatal(err)
		}

		if spec := res.TypedSpec(); !spec.Running || spec.Unknown || !spec.Healthy {
			t.Fatalf("%s: WaitUp returned while the resource says %+v", id, spec)
		}
	}
}

// TestHealthStartupPeriod: checks repeat at StartupPeriod until the first
// success, so a service whose socket comes up a moment late is healthy a
// moment later, not a Period (here an hour) later.
func TestHealthStartupPeriod(t *testing.T) {
	h := newHarness(t, nil)

	var calls atomic.Int32

	hc := &supervisor.HealthCheck{
		Func: func(context.Context) error {
			if calls.Add(1) < 3 {
				return errors.New("socket not there yet")
			}

			return nil
		},
		InitialDelay:  time.Millisecond,
		StartupPeriod: 5 * time.Millisecond,
		Period:        time.Hour,
	}

	h.load(t, supervisor.Service{ID: "svc", Runner: blocker(), Health: hc})
	h.start(t, "svc")

	if err := h.sup.WaitUp(ctxTimeout(t), "svc"); err != nil {
		t.Fatalf("not healthy after %d checks: %v", calls.Load(), err)
	}

	if n := calls.Load(); n != 3 {
		t.Fatalf("%d checks, want 3", n)
	}
}
