package sequencer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/sequencer"
)

// fixedClock advances by 1ms per reading, so durations are predictable.
func fixedClock() func() time.Time {
	var (
		mu sync.Mutex
		t  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	)

	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()

		t = t.Add(time.Millisecond)

		return t
	}
}

func TestPhasesRunInOrderTasksInParallel(t *testing.T) {
	var out bytes.Buffer

	r := &sequencer.Runner{Console: &out, Now: fixedClock()}

	// Both tasks of the first phase must be running at once: each waits
	// for the other to start.
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	var order []string
	var mu sync.Mutex

	record := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}

	seq := &sequencer.Sequence{Name: "boot"}
	seq.Append("first",
		sequencer.Task{Name: "a", Func: func(ctx context.Context, _ io.Writer) error {
			close(aStarted)
			<-bStarted
			record("a")
			return nil
		}},
		sequencer.Task{Name: "b", Func: func(ctx context.Context, _ io.Writer) error {
			close(bStarted)
			<-aStarted
			record("b")
			return nil
		}},
	).Append("second", sequencer.Task{Name: "c", Func: func(context.Context, io.Writer) error {
		record("c")
		return nil
	}}).AppendWhen(false, "skipped", sequencer.Task{Name: "never", Func: func(context.Context, io.Writer) error {
		record("never")
		return nil
	}})

	done := make(chan error)
	go func() { done <- r.Run(context.Background(), seq) }()

	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks of one phase did not run in parallel")
	}

	if len(order) != 3 || order[2] != "c" {
		t.Fatalf("order = %v, want a and b before c", order)
	}

	log := out.String()
	for _, want := range []string{
		"[talos] boot sequence: 2 phase(s)\n",
		"[talos] phase first (1/2): 2 task(s)\n",
		"[talos] task a (1/3): starting\n",
		"[talos] task b (2/3): starting\n",
		"[talos] task c (3/3): starting\n",
		"[talos] task c (3/3): done in 1ms\n",
		"[talos] boot sequence: done in ",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	if strings.Contains(log, "never") {
		t.Error("a phase appended with a false condition ran")
	}
}

func TestFailureStopsAfterThePhase(t *testing.T) {
	var (
		out      bytes.Buffer
		observed []string
		mu       sync.Mutex
	)

	r := &sequencer.Runner{Console: &out, Observe: func(kind, name, action string, err error) {
		mu.Lock()
		defer mu.Unlock()

		if kind != "task" {
			observed = append(observed, kind+" "+name+" "+action)
		}
	}}

	var sibling, later atomic.Bool

	seq := &sequencer.Sequence{Name: "boot"}
	seq.Append("mount",
		sequencer.Task{Name: "bad", Func: func(context.Context, io.Writer) error { return errors.New("no such device") }},
		sequencer.Task{Name: "good", Func: func(context.Context, io.Writer) error { sibling.Store(true); return nil }},
	).Append("after", sequencer.Task{Name: "later", Func: func(context.Context, io.Writer) error { later.Store(true); return nil }})

	err := r.Run(context.Background(), seq)
	if err == nil || err.Error() != "boot sequence: phase mount: task bad: no such device" {
		t.Fatalf("err = %v", err)
	}

	if !sibling.Load() || later.Load() {
		t.Fatalf("sibling ran=%v later ran=%v; want the phase finished and nothing after it", sibling.Load(), later.Load())
	}

	if !strings.Contains(out.String(), "[talos] task bad (1/3): failed: no such device\n") {
		t.Fatalf("log:\n%s", out.String())
	}

	want := []string{"sequence boot start", "phase mount start", "phase mount fail", "sequence boot fail"}
	if strings.Join(observed, ",") != strings.Join(want, ",") {
		t.Fatalf("observed %v, want %v", observed, want)
	}
}

func TestPanickingTaskIsAnError(t *testing.T) {
	r := &sequencer.Runner{}
	seq := (&sequencer.Sequence{Name: "reset"}).Append("wipe", sequencer.Task{Name: "oops", Func: func(context.Context, io.Writer) error {
		panic("boom")
	}})

	if err := r.Run(context.Background(), seq); err == nil || !strings.Contains(err.Error(), "task oops: panic: boom") {
		t.Fatalf("err = %v", err)
	}
}
