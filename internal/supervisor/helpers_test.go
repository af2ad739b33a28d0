package supervisor_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// waitTimeout bounds every wait in these tests; nothing should come close.
const waitTimeout = 20 * time.Second

type recorded struct {
	ID    string
	Event supervisor.Event
}

func (r recorded) String() string {
	return fmt.Sprintf("%s %s: %s", r.ID, r.Event.State, r.Event.Message)
}

// recorder collects every event through Options.OnEvent, so tests wait
// for events instead of sleeping.
type recorder struct {
	mu      sync.Mutex
	all     []recorded
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) add(id string, ev supervisor.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()

	r.all = append(r.all, recorded{id, ev})
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) snapshot() ([]recorded, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()

	return slices.Clone(r.all), r.changed
}

// wait returns the events once cond holds for them.
func (r *recorder) wait(t *testing.T, what string, cond func([]recorded) bool) []recorded {
	t.Helper()

	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()

	for {
		evs, changed := r.snapshot()
		if cond(evs) {
			return evs
		}

		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; events:\n%s", what, dump(evs))
		}
	}
}

// waitEvent waits for an event of id with this state and message.
func (r *recorder) waitEvent(t *testing.T, id string, state supervisor.State, msg string) {
	t.Helper()

	r.wait(t, fmt.Sprintf("%s %s: %s", id, state, msg), func(evs []recorded) bool {
		return slices.ContainsFunc(evs, func(e recorded) bool {
			return e.ID == id && e.Event.State == state && e.Event.Message == msg
		})
	})
}

// waitState waits for any event of id in state.
func (r *recorder) waitState(t *testing.T, id string, state supervisor.State) {
	t.Helper()

	r.wait(t, fmt.Sprintf("%s to be %s", id, state), func(evs []recorded) bool {
		return slices.ContainsFunc(evs, func(e recorded) bool { return e.ID == id && e.Event.State == state })
	})
}

// lines renders id's events as "State: message", oldest first.
func (r *recorder) lines(id string) []string {
	evs, _ := r.snapshot()

	var out []string

	for _, e := range evs {
		if e.ID == id {
			out = append(out, e.Event.State.String()+": "+e.Event.Message)
		}
	}

	return out
}

func dump(evs []recorded) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("  " + e.String() + "\n")
	}

	return b.String()
}

// syncBuffer is a console that tests can read while services write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.buf.String()
}

type harness struct {
	sup     *supervisor.Supervisor
	rec     *recorder
	store   *bus.Store
	console *syncBuffer
}

// newHarness builds a supervisor whose services are all stopped, and
// whose goroutines are checked for leaks, when the test ends.
func newHarness(t *testing.T, tweak func(*supervisor.Options)) *harness {
	t.Helper()

	checkNoLeaks(t)

	h := &harness{rec: newRecorder(), store: bus.NewStore(bus.StoreOptions{}), console: &syncBuffer{}}
	opts := supervisor.Options{Store: h.store, Console: h.console, OnEvent: h.rec.add, StopTimeout: waitTimeout}

	if tweak != nil {
		tweak(&opts)
	}

	h.sup = supervisor.New(opts)

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()

		if err := h.sup.StopAll(ctx); err != nil {
			t.Errorf("StopAll: %v", err)
		}
	})

	return h
}

func (h *harness) load(t *testing.T, svcs ...supervisor.Service) {
	t.Helper()

	if err := h.sup.Load(svcs...); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) start(t *testing.T, ids ...string) {
	t.Helper()

	if err := h.sup.Start(ids...); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) stop(t *testing.T, id string) {
	t.Helper()

	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()

	if err := h.sup.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// checkNoLeaks fails the test if, once its other cleanups have run, a
// goroutine is still inside package supervisor. Registered first, it runs
// last.
func checkNoLeaks(t *testing.T) {
	t.Helper()

	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)

		for {
			leaked := supervisorGoroutines()
			if len(leaked) == 0 {
				return
			}

			if time.Now().After(deadline) {
				t.Errorf("leaked goroutines:\n\n%s", strings.Join(leaked, "\n\n"))
				return
			}

			// Goroutines that closed their done channel may need a moment
			// to return; this polls for that, it synchronizes nothing.
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func supervisorGoroutines() []string {
	buf := make([]byte, 1<<20)
	stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")

	var out []string

	for _, g := range stacks[1:] { // the first one is this goroutine
		if strings.Contains(g, "talosbox/internal/supervisor.") {
			out = append(out, g)
		}
	}

	return out
}

// blocker is a goroutine service that runs until stopped.
func blocker() supervisor.Runner {
	return supervisor.GoroutineRunner(func(ctx context.Context, _ io.Writer) error {
		<-ctx.Done()
		return ctx.Err()
	})
}

// Resources the tests' conditions wait for.
const (
	testNS   = "test"
	testType = "Things.test.talos.dev"
)

type thing struct {
	Ready bool `yaml:"ready"`
	Value int  `yaml:"value"`
}

func thingPtr(id string) bus.Pointer { return bus.Pointer{Namespace: testNS, Type: testType, ID: id} }

func putThing(t *testing.T, st *bus.Store, id string, spec thing) {
	t.Helper()

	_, err := st.Modify(t.Context(), bus.NewTyped(testNS, testType, id, spec), func(r bus.Resource) error {
		*r.(*bus.Typed[thing]).TypedSpec() = spec
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ctxTimeout(t *testing.T) context.Context {
	t.Helper()

	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)

	return ctx
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()

	if !slices.Equal(got, want) {
		t.Fatalf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
