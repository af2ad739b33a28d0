package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/talosbox/talosbox/internal/bus"
)

const doubleType = "Doubles.test.talos.dev"

var doubleKind = bus.Kind{Namespace: ns, Type: doubleType}

// doubler keeps one Double per Thing with twice its value, and removes
// Doubles whose Thing is gone. It fails and panics on its first runs when
// told to, to exercise restarts.
type doubler struct {
	failures int32 // errors to return before working
	panics   int32 // panics after the errors
	runs     atomic.Int32
	finalize bool // hold Things with a finalizer while they are used
}

func (d *doubler) Name() string { return "test.Doubler" }

func (d *doubler) Inputs() []bus.Input {
	k := bus.InputWeak
	if d.finalize {
		k = bus.InputStrong
	}

	return []bus.Input{{Namespace: ns, Type: typ, Kind: k}}
}

func (d *doubler) Outputs() []bus.Output { return []bus.Output{{Type: doubleType}} }

func (d *doubler) Run(ctx context.Context, r bus.ControllerRuntime) error {
	switch n := d.runs.Add(1); {
	case n <= d.failures:
		return errors.New("transient failure")
	case n <= d.failures+d.panics:
		panic("boom")
	}

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		if err := d.reconcile(ctx, r); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

func (d *doubler) reconcile(ctx context.Context, r bus.ControllerRuntime) error {
	things, err := bus.ListAs[*res](ctx, r, kind)
	if err != nil {
		return err
	}

	keep := map[string]bool{}

	for _, th := range things {
		id := th.Metadata().ID

		if th.Metadata().Phase == bus.PhaseTearingDown {
			if d.finalize {
				if err := r.RemoveFinalizer(ctx, th.Metadata().Pointer(), "test.Doubler"); err != nil {
					return err
				}
			}

			continue
		}

		if d.finalize && !th.Metadata().Finalizers.Has("test.Doubler") {
			if err := r.AddFinalizer(ctx, th.Metadata().Pointer(), "test.Doubler"); err != nil {
				return err
			}
		}

		keep[id] = true
		v := th.TypedSpec().Value

		if _, err := bus.ModifyAs(ctx, r, bus.NewTyped(ns, doubleType, id, spec{}), func(out *res) error {
			out.TypedSpec().Value = 2 * v
			return nil
		}); err != nil {
			return err
		}
	}

	doubles, err := r.List(ctx, doubleKind)
	if err != nil {
		return err
	}

	for _, dbl := range doubles {
		if !keep[dbl.Metadata().ID] {
			if err := r.Destroy(ctx, dbl.Metadata().Pointer()); err != nil {
				return err
			}
		}
	}

	return nil
}

func startRuntime(t *testing.T, s *bus.Store, ctrls ...bus.Controller) *bus.Runtime {
	t.Helper()

	rt := bus.NewRuntime(s, bus.RuntimeOptions{BackoffMin: 1e6, BackoffMax: 1e7})
	for _, c := range ctrls {
		if err := rt.Register(c); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck // returns nil on cancel
	}()

	t.Cleanup(func() {
		cancel()
		<-done
	})

	return rt
}

// waitDoubles watches Doubles until they equal want (id -> value).
func waitDoubles(t *testing.T, s *bus.Store, want map[string]int) {
	t.Helper()

	w, err := s.WatchKind(testCtx(t), doubleKind)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	have := map[string]int{}
	bootstrapped := false

	for {
		ev := recv(t, w)

		switch ev.Type {
		case bus.Bootstrapped:
			bootstrapped = true
		case bus.Destroyed:
			delete(have, ev.Resource.Metadata().ID)
		case bus.Created, bus.Updated:
			have[ev.Resource.Metadata().ID] = value(ev.Resource)
		case bus.Errored:
			t.Fatal(ev.Err)
		}

		if bootstrapped && equalMaps(have, want) {
			return
		}
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}

	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}

	return true
}

func TestControllerReconcilesInputs(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	if err := s.Create(ctx, newRes("a", 1)); err != nil {
		t.Fatal(err)
	}

	startRuntime(t, s, &doubler{})
	waitDoubles(t, s, map[string]int{"a": 2})

	b := newRes("b", 5)
	if err := s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}

	b.TypedSpec().Value = 6
	if err := s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}

	if err := s.Destroy(ctx, ptr("a")); err != nil {
		t.Fatal(err)
	}

	waitDoubles(t, s, map[string]int{"b": 12})

	// The outputs belong to the controller: nobody else may change them.
	dbl, _ := s.Get(ctx, bus.Pointer{Namespace: ns, Type: doubleType, ID: "b"})
	if err := s.Update(ctx, dbl.DeepCopy()); !errors.Is(err, bus.ErrOwnerConflict) {
		t.Fatalf("foreign update of a controller output: %v, want owner conflict", err)
	}

	if got := dbl.Metadata().Owner; got != "test.Doubler" {
		t.Fatalf("output owner = %q", got)
	}
}

func TestControllerRestartsAfterErrorsAndPanics(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	if err := s.Create(ctx, newRes("a", 21)); err != nil {
		t.Fatal(err)
	}

	d := &doubler{failures: 2, panics: 1}
	rt := startRuntime(t, s, d)

	waitDoubles(t, s, map[string]int{"a": 42})

	st := rt.Status()[0]
	if st.Restarts != 3 || !st.Running {
		t.Fatalf("status = %+v, want 3 restarts and running", st)
	}

	if !strings.Contains(st.LastError, `controller "test.Doubler" panicked: boom`) {
		t.Fatalf("last error = %q, want the panic", st.LastError)
	}

	if d.runs.Load() != 4 {
		t.Fatalf("runs = %d, want 4", d.runs.Load())
	}
}

// trespasser tries everything a controller must not do.
type trespasser struct {
	errs chan error
}

func (tr *trespasser) Name() string { return "test.Trespasser" }
func (tr *trespasser) Inputs() []bus.Input {
	return []bus.Input{{Namespace: ns, Type: typ}}
}

func (tr *trespasser) Outputs() []bus.Output {
	return []bus.Output{{Type: "Others.test.talos.dev", Kind: bus.OutputShared}}
}

func (tr *trespasser) Run(ctx context.Context, r bus.ControllerRuntime) error {
	<-r.EventCh()

	other := bus.Kind{Namespace: ns, Type: "Secrets.test.talos.dev"}
	_, readErr := r.List(ctx, other)
	tr.errs <- readErr
	tr.errs <- r.Create(ctx, newRes("x", 1))                                         // an input, not an output
	tr.errs <- r.AddFinalizer(ctx, ptr("a"), "mine")                                 // weak input
	tr.errs <- r.Update(ctx, bus.NewTyped(ns, "Others.test.talos.dev", "y", spec{})) // owned by the test

	<-ctx.Done()

	return nil
}

func TestControllerWritesAreLimitedToOutputs(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	if err := s.Create(ctx, newRes("a", 1)); err != nil {
		t.Fatal(err)
	}

	other := bus.NewTyped(ns, "Others.test.talos.dev", "y", spec{})
	if err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	tr := &trespasser{errs: make(chan error, 4)}
	startRuntime(t, s, tr)

	want := []struct {
		err error
		msg string
	}{
		{bus.ErrNotDeclared, `list Secrets.test.talos.dev(test): not declared by the controller: controller "test.Trespasser" does not declare it as an input or output`},
		{bus.ErrNotDeclared, `create test/Things.test.talos.dev/x: not declared by the controller: controller "test.Trespasser" does not declare Things.test.talos.dev as an output`},
		{bus.ErrNotDeclared, `add finalizer test/Things.test.talos.dev/a: not declared by the controller: controller "test.Trespasser" may only put finalizers on its strong inputs`},
		{bus.ErrOwnerConflict, `update test/Others.test.talos.dev/y: owner conflict: owned by "", not "test.Trespasser"`},
	}

	for i, w := range want {
		var err error
		select {
		case err = <-tr.errs:
		case <-ctx.Done():
			t.Fatal("timed out")
		}

		if !errors.Is(err, w.err) || err.Error() != w.msg {
			t.Errorf("attempt %d: %v\nwant: %s", i, err, w.msg)
		}
	}
}

type named struct {
	name    string
	outputs []bus.Output
}

func (n named) Name() string                                     { return n.name }
func (n named) Inputs() []bus.Input                              { return nil }
func (n named) Outputs() []bus.Output                            { return n.outputs }
func (n named) Run(context.Context, bus.ControllerRuntime) error { return nil }

func TestRegisterRefusesClashingOutputs(t *testing.T) {
	excl := []bus.Output{{Type: doubleType}}
	shared := []bus.Output{{Type: doubleType, Kind: bus.OutputShared}}

	tests := []struct {
		name        string
		first, next named
		want        string
	}{
		{"exclusive then exclusive", named{"a", excl}, named{"b", excl},
			`register controller "b": output Doubles.test.talos.dev is already written by "a"; an exclusive output has one writer`},
		{"shared then exclusive", named{"a", shared}, named{"b", excl},
			`register controller "b": output Doubles.test.talos.dev is already written by "a"; an exclusive output has one writer`},
		{"exclusive then shared", named{"a", excl}, named{"b", shared},
			`register controller "b": output Doubles.test.talos.dev is already written by "a"; an exclusive output has one writer`},
		{"same name", named{"a", nil}, named{"a", nil}, `register controller "a": already registered`},
		{"shared twice", named{"a", shared}, named{"b", shared}, ""},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := bus.NewRuntime(bus.NewStore(bus.StoreOptions{}), bus.RuntimeOptions{})
			if err := rt.Register(tt.first); err != nil {
				t.Fatal(err)
			}

			err := rt.Register(tt.next)
			if got := errString(err); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}

	return err.Error()
}

func TestTeardownWaitsForConsumerFinalizers(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})
	owner := bus.WithOwner("producer")

	if err := s.Create(ctx, newRes("a", 1), owner); err != nil {
		t.Fatal(err)
	}

	w, err := s.Watch(ctx, ptr("a"))
	if err != nil {
		t.Fatal(err)
	}

	startRuntime(t, s, &doubler{finalize: true})

	// The consumer takes hold of the input...
	waitFor(t, w, func(r bus.Resource) bool { return r.Metadata().Finalizers.Has("test.Doubler") })

	if err := s.Destroy(ctx, ptr("a"), owner); !errors.Is(err, bus.ErrPendingFinalizers) {
		t.Fatalf("destroy while consumed: %v", err)
	}

	// ...and lets go once the producer tears it down.
	if ready, err := s.Teardown(ctx, ptr("a"), owner); err != nil || ready {
		t.Fatalf("teardown = %v, %v", ready, err)
	}

	waitFor(t, w, func(r bus.Resource) bool { return r.Metadata().Finalizers.Len() == 0 })

	if err := s.Destroy(ctx, ptr("a"), owner); err != nil {
		t.Fatal(err)
	}

	waitDoubles(t, s, map[string]int{})
}

func waitFor(t *testing.T, w *bus.Watcher, cond func(bus.Resource) bool) {
	t.Helper()

	for {
		ev := recv(t, w)
		if ev.Resource != nil && ev.Type != bus.Destroyed && cond(ev.Resource) {
			return
		}
	}
}
