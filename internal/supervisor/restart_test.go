package supervisor_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/supervisor"
)

// scripted returns a goroutine runner whose n-th run (from 0) returns
// results[n], or the last result for later runs, and counts its runs.
func scripted(runs *atomic.Int32, results ...error) supervisor.Runner {
	return supervisor.GoroutineRunner(func(context.Context, io.Writer) error {
		n := int(runs.Add(1)) - 1
		return results[min(n, len(results)-1)]
	})
}

func TestRestartPolicies(t *testing.T) {
	boom := errors.New("boom")

	const (
		starting  = "Starting: Starting service"
		pre       = "Preparing: Running pre state"
		create    = "Preparing: Creating service runner"
		running   = "Running: Service started as goroutine"
		finished  = "Finished: Service finished successfully"
		untilFail = `Waiting: Error running Goroutine("svc"), going to restart until it succeeds: boom`
	)

	for _, tc := range []struct {
		name     string
		policy   supervisor.RestartPolicy
		results  []error
		final    supervisor.State
		wantRuns int32
		want     []string
	}{
		{
			name: "once after failure", policy: supervisor.Once, results: []error{boom},
			final: supervisor.Failed, wantRuns: 1,
			want: []string{starting, pre, create, running, "Failed: Failed running service: boom"},
		},
		{
			name: "once after success", policy: supervisor.Once, results: []error{nil},
			final: supervisor.Finished, wantRuns: 1,
			want: []string{starting, pre, create, running, finished},
		},
		{
			name: "until success stops restarting after success", policy: supervisor.UntilSuccess, results: []error{boom, boom, nil},
			final: supervisor.Finished, wantRuns: 3,
			want: []string{starting, pre, create, running, untilFail, running, untilFail, running, finished},
		},
		{
			name: "until success after immediate success", policy: supervisor.UntilSuccess, results: []error{nil},
			final: supervisor.Finished, wantRuns: 1,
			want: []string{starting, pre, create, running, finished},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)

			var runs atomic.Int32

			h.load(t, supervisor.Service{ID: "svc", Runner: scripted(&runs, tc.results...), Restart: tc.policy, RestartInterval: 10 * time.Millisecond})
			h.start(t, "svc")
			h.rec.waitState(t, "svc", tc.final)

			equalLines(t, "events", h.rec.lines("svc"), tc.want)

			// The goroutine is gone once Stop returns: no run can follow.
			h.stop(t, "svc")

			if got := runs.Load(); got != tc.wantRuns {
				t.Errorf("%d runs, want %d", got, tc.wantRuns)
			}
		})
	}
}

func TestForeverRestartsAfterCleanExit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []error
		waiting string
	}{
		{"clean exit", []error{nil}, `Waiting: Runner Goroutine("svc") exited without error, going to restart it`},
		{"failure", []error{errors.New("boom")}, `Waiting: Error running Goroutine("svc"), going to restart forever: boom`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)

			var runs atomic.Int32

			h.load(t, supervisor.Service{ID: "svc", Runner: scripted(&runs, tc.results...), RestartInterval: time.Millisecond})
			h.start(t, "svc")

			h.rec.wait(t, "three restarts", func(evs []recorded) bool {
				n := 0
				for _, e := range evs {
					if e.Event.State == supervisor.Waiting {
						n++
					}
				}

				return n >= 3
			})
			h.stop(t, "svc")

			lines := h.rec.lines("svc")
			if !slices.Contains(lines, tc.waiting) {
				t.Fatalf("no %q in:\n%s", tc.waiting, strings.Join(lines, "\n"))
			}

			if last := lines[len(lines)-1]; last != "Finished: Service finished successfully" {
				t.Fatalf("last event %q", last)
			}

			if runs.Load() < 3 {
				t.Fatalf("%d runs, want at least 3", runs.Load())
			}
		})
	}
}

func TestStopCancelsBackoff(t *testing.T) {
	for _, policy := range []supervisor.RestartPolicy{supervisor.Forever, supervisor.UntilSuccess} {
		t.Run(policy.String(), func(t *testing.T) {
			h := newHarness(t, nil)

			var runs atomic.Int32

			// An hour-long backoff: only a cancelled wait lets the test end.
			h.load(t, supervisor.Service{ID: "svc", Runner: scripted(&runs, errors.New("boom")), Restart: policy, RestartInterval: time.Hour})
			h.start(t, "svc")
			h.rec.waitState(t, "svc", supervisor.Waiting)
			h.stop(t, "svc")

			lines := h.rec.lines("svc")
			equalLines(t, "last events", lines[len(lines)-2:], []string{
				"Stopping: Aborting restart sequence",
				"Finished: Service finished successfully",
			})

			if runs.Load() != 1 {
				t.Fatalf("%d runs, want 1", runs.Load())
			}
		})
	}
}

func TestEventHistoryIsBounded(t *testing.T) {
	h := newHarness(t, nil)

	var runs atomic.Int32

	h.load(t, supervisor.Service{ID: "svc", Runner: scripted(&runs, nil), RestartInterval: time.Millisecond, MaxRestartInterval: time.Millisecond})
	h.start(t, "svc")
	h.rec.wait(t, "100 events", func(evs []recorded) bool { return len(evs) >= 100 })
	h.stop(t, "svc")

	evs, _ := h.rec.snapshot()
	st, _ := h.sup.Status("svc")

	if len(st.Events) != supervisor.MaxEvents {
		t.Fatalf("%d events kept, want %d", len(st.Events), supervisor.MaxEvents)
	}

	tail := evs[len(evs)-supervisor.MaxEvents:]
	for i, ev := range st.Events {
		if ev != tail[i].Event {
			t.Fatalf("event %d is %+v, want %+v (oldest first)", i, ev, tail[i].Event)
		}
	}

	if st.State != supervisor.Finished {
		t.Fatalf("state %s", st.State)
	}
}

func TestRestartPolicyNames(t *testing.T) {
	for p, want := range map[supervisor.RestartPolicy]string{
		supervisor.Forever: "Forever", supervisor.Once: "Once", supervisor.UntilSuccess: "UntilSuccess", 7: "Unknown",
	} {
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", int(p), got, want)
		}
	}
}

// Whoever sees a service's final state may start it again at once: the
// handle is released in the same step that records the final state.
func TestStartRightAfterFinish(t *testing.T) {
	var hold atomic.Bool

	held, release := make(chan struct{}), make(chan struct{})

	h := newHarness(t, func(o *supervisor.Options) {
		record := o.OnEvent
		o.OnEvent = func(id string, ev supervisor.Event) {
			record(id, ev)

			// Keep the run's goroutine inside its final event while the
			// test calls Start.
			if ev.State == supervisor.Finished && hold.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
		}
	})

	var runs atomic.Int32

	h.load(t, supervisor.Service{ID: "job", Restart: supervisor.Once, Runner: scripted(&runs, nil)})
	hold.Store(true)
	h.start(t, "job")

	// Start must come while the first run sits in its final event, not
	// while it still runs (Start on a running service does nothing).
	select {
	case <-held:
	case <-ctxTimeout(t).Done():
		t.Fatalf("the first run did not finish; events:\n%s", strings.Join(h.rec.lines("job"), "\n"))
	}

	started := make(chan error, 1)

	go func() { started <- h.sup.Start("job") }()

	close(release)

	if err := <-started; err != nil {
		t.Fatal(err)
	}

	h.rec.wait(t, "the second run to finish", func(evs []recorded) bool {
		return len(finishOrder(evs)) == 2
	})

	if runs.Load() != 2 {
		t.Fatalf("%d runs, want 2", runs.Load())
	}
}
