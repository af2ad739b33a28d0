package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
)

type spec struct {
	Value int      `yaml:"value"`
	Tags  []string `yaml:"tags,omitempty"`
}

type res = bus.Typed[spec]

const (
	ns  = "test"
	typ = "Things.test.talos.dev"
)

var kind = bus.Kind{Namespace: ns, Type: typ}

func ptr(id string) bus.Pointer { return bus.Pointer{Namespace: ns, Type: typ, ID: id} }

func newRes(id string, v int) *res { return bus.NewTyped(ns, typ, id, spec{Value: v}) }

func value(r bus.Resource) int { return r.(*res).TypedSpec().Value }

func testCtx(t *testing.T) context.Context {
	t.Helper()

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)

	return ctx
}

// recv reads one event or fails the test at the deadline.
func recv(t *testing.T, w *bus.Watcher) bus.Event {
	t.Helper()

	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatal("watch channel closed")
		}

		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for an event")
	}

	return bus.Event{}
}
