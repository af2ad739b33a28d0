package supervisor_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/logring"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
	"github.com/talosbox/talosbox/internal/supervisor"
)

func TestDefinition(t *testing.T) {
	reg := bus.NewRegistry()
	for _, d := range v1alpha1.Definitions {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}

	for _, name := range []string{"svc", "services", "service", v1alpha1.ServiceType} {
		d, err := reg.Lookup(name)
		if err != nil || d.Type != v1alpha1.ServiceType {
			t.Errorf("Lookup(%q) = %v, %v", name, d.Type, err)
		}
	}

	d, err := reg.Lookup(v1alpha1.ServiceType)
	if err != nil {
		t.Fatal(err)
	}

	var cols []string
	for _, c := range d.PrintColumns {
		cols = append(cols, c.Name)
	}

	equalLines(t, "columns", cols, []string{"RUNNING", "HEALTHY", "HEALTH UNKNOWN"})
}

func TestServiceSpecDeepCopy(t *testing.T) {
	orig := v1alpha1.ServiceSpec{State: "Running", Events: []v1alpha1.EventSpec{{Message: "a"}}}
	cp := orig.DeepCopy()
	cp.Events[0].Message = "b"

	if orig.Events[0].Message != "a" {
		t.Fatal("DeepCopy shares Events")
	}
}

// nextSpec returns the next Services resource spec from the watch.
func nextSpec(t *testing.T, w *bus.Watcher) v1alpha1.ServiceSpec {
	t.Helper()

	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatal("watch closed")
			}

			if ev.Type == bus.Created || ev.Type == bus.Updated {
				return *ev.Resource.(*v1alpha1.Service).TypedSpec()
			}
		case <-time.After(waitTimeout):
			t.Fatal("timed out waiting for a Services resource")
		}
	}
}

func TestServicesResourcesMirrorState(t *testing.T) {
	h := newHarness(t, nil)

	w, err := h.store.Watch(ctxTimeout(t), v1alpha1.ServicePointer("svc"))
	if err != nil {
		t.Fatal(err)
	}

	defer w.Close()

	h.load(t, supervisor.Service{ID: "svc", Runner: blocker()})

	initial := nextSpec(t, w)
	if initial.State != "Initialized" || initial.Running || !initial.Unknown || len(initial.Events) != 0 {
		t.Fatalf("after Load: %+v", initial)
	}

	h.start(t, "svc")

	var states []string

	for {
		spec := nextSpec(t, w)
		states = append(states, spec.State)

		if len(spec.Events) == 0 || spec.Events[len(spec.Events)-1].Message != spec.LastMessage {
			t.Fatalf("LastMessage %q does not match the last event in %+v", spec.LastMessage, spec.Events)
		}

		if spec.Running != (spec.State == "Running") {
			t.Fatalf("Running=%v in state %s", spec.Running, spec.State)
		}

		if spec.State == "Running" {
			break
		}
	}

	equalLines(t, "resource states", states, []string{"Starting", "Preparing", "Preparing", "Running"})

	h.stop(t, "svc")

	final := nextSpec(t, w)
	if final.State != "Finished" || final.Running || final.LastMessage != "Service finished successfully" || len(final.Events) != 5 {
		t.Fatalf("after Stop: %+v", final)
	}

	if final.Events[0].Message != "Starting service" || final.Events[0].Timestamp.IsZero() {
		t.Fatalf("oldest event: %+v", final.Events[0])
	}

	// A sixth event pushes the oldest out: the resource keeps five.
	h.start(t, "svc")

	again := nextSpec(t, w)
	if again.State != "Starting" || len(again.Events) != 5 || again.Events[0].Message != "Running pre state" || again.Events[0].State != "Preparing" {
		t.Fatalf("after the sixth event: %+v", again)
	}

	res, err := h.store.Get(t.Context(), v1alpha1.ServicePointer("svc"))
	if err != nil || res.Metadata().Owner != supervisor.Owner {
		t.Fatalf("resource %v, %v", res, err)
	}
}

func TestLogsFollow(t *testing.T) {
	h := newHarness(t, func(o *supervisor.Options) { o.LogSize = 4096 })

	say := make(chan string)

	h.load(t, supervisor.Service{ID: "svc", Runner: supervisor.GoroutineRunner(func(ctx context.Context, log io.Writer) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case s := <-say:
				fmt.Fprintln(log, s)
			}
		}
	})})
	h.start(t, "svc")

	ring := logsOf(t, h, "svc")
	if ring.Size() != 4096 {
		t.Fatalf("ring size %d", ring.Size())
	}

	say <- "before"

	rd := ring.Reader(logring.ReadOptions{TailLines: 1, Follow: true})
	lines := make(chan string)
	readDone := make(chan error, 1)

	go func() {
		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			lines <- sc.Text()
		}

		readDone <- sc.Err()
	}()

	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(waitTimeout):
			t.Fatal("timed out waiting for a log line")
		}

		return ""
	}

	for _, want := range []string{"before", "one", "two"} {
		if want != "before" {
			say <- want
		}

		if got := next(); got != want {
			t.Fatalf("line %q, want %q", got, want)
		}
	}

	// Closing the reader ends a follow that is blocked waiting for data.
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}

	select {
	case err := <-readDone:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Close did not end the follow")
	}
}

// A listening service is unhealthy until it serves and after it stops.
func TestListening(t *testing.T) {
	var l supervisor.Listening

	check := l.Check().Func
	for _, tc := range []struct {
		serving bool
		healthy bool
	}{{false, false}, {true, true}, {false, false}} {
		l.Serving(tc.serving)

		if err := check(t.Context()); (err == nil) != tc.healthy {
			t.Fatalf("serving %v: check says %v", tc.serving, err)
		}
	}
}
