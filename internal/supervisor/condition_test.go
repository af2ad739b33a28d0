package supervisor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/supervisor"
)

func waitAsync(ctx context.Context, c supervisor.Condition) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Wait(ctx) }()

	return done
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()

	select {
	case err := <-done:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("condition did not return")
	}

	return nil
}

func TestResourceConditionPredicate(t *testing.T) {
	st := bus.NewStore(bus.StoreOptions{})
	seen := make(chan bool)

	cond := supervisor.ResourceCondition(st, thingPtr("x"), func(r bus.Resource) bool {
		ok := r.(*bus.Typed[thing]).TypedSpec().Ready
		seen <- ok

		return ok
	}, "")

	if got, want := cond.String(), "resource test/Things.test.talos.dev/x to exist"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}

	done := waitAsync(t.Context(), cond)

	putThing(t, st, "x", thing{Ready: false})

	if ok := <-seen; ok {
		t.Fatal("predicate accepted a resource that is not ready")
	}

	select {
	case err := <-done:
		t.Fatalf("Wait returned %v while the predicate said no", err)
	default:
	}

	putThing(t, st, "x", thing{Ready: true})

	if ok := <-seen; !ok {
		t.Fatal("predicate rejected a ready resource")
	}

	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestResourceConditionCancel(t *testing.T) {
	st := bus.NewStore(bus.StoreOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	done := waitAsync(ctx, supervisor.ResourceCondition(st, thingPtr("never"), nil, "never"))

	cancel()

	if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
}

// A consumer that falls behind loses its watch; the condition must start a
// new one rather than fail or miss the final state.
func TestResourceConditionSurvivesOverrun(t *testing.T) {
	st := bus.NewStore(bus.StoreOptions{WatchQueue: 1})
	putThing(t, st, "x", thing{Value: 0})

	entered := make(chan struct{}, 1)
	gate := make(chan struct{})

	cond := supervisor.ResourceCondition(st, thingPtr("x"), func(r bus.Resource) bool {
		select {
		case entered <- struct{}{}:
			<-gate // hold the first event while the writer overruns the queue
		default:
		}

		return r.(*bus.Typed[thing]).TypedSpec().Value == 5
	}, "x to be 5")

	done := waitAsync(t.Context(), cond)

	<-entered

	for v := 1; v <= 5; v++ {
		putThing(t, st, "x", thing{Value: v})
	}

	close(gate)

	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
}
