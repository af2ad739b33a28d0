package discovery_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// chanWatcher delivers the lists and the break the test sends it.
type chanWatcher struct {
	lists            chan []cluster.AffiliateSpec
	breaks           chan error
	running, started atomic.Int32
}

func (w *chanWatcher) Watch(ctx context.Context, changed func([]cluster.AffiliateSpec)) error {
	w.started.Add(1)
	w.running.Add(1)
	defer w.running.Add(-1)

	for {
		select {
		case <-ctx.Done():
			return nil
		case l := <-w.lists:
			changed(l)
		case err := <-w.breaks:
			return err
		}
	}
}

// next waits for r's next signal and returns the node IDs it reads.
func next(t *testing.T, r *discovery.Reader) ([]string, bool) {
	t.Helper()

	select {
	case _, ok := <-r.C():
		if !ok {
			return nil, false
		}
	case <-time.After(converge):
		t.Fatal("no list from the feed")
	}

	list, have := r.List()
	if !have {
		t.Fatal("signalled without a list")
	}

	ids := []string{}
	for _, a := range list {
		ids = append(ids, a.NodeID)
	}

	return ids, true
}

func TestFeed(t *testing.T) {
	w := &chanWatcher{lists: make(chan []cluster.AffiliateSpec), breaks: make(chan error)}
	feed := discovery.NewFeed(w)
	one := []cluster.AffiliateSpec{record("node-a", "10.5.0.2")}
	two := append([]cluster.AffiliateSpec{}, one[0], record("node-b", "10.5.0.3"))

	r1 := feed.Subscribe()
	w.lists <- one // received: the watch runs

	if ids, ok := next(t, r1); !ok || len(ids) != 1 {
		t.Fatalf("first reader: %v %v", ids, ok)
	}

	// A second reader shares the watch and gets the list at once.
	r2 := feed.Subscribe()
	if ids, ok := next(t, r2); !ok || len(ids) != 1 || w.started.Load() != 1 {
		t.Fatalf("second reader: %v %v, %d watches", ids, ok, w.started.Load())
	}

	// The same list again is no news (a lease refresh). The second send
	// is taken once the first one's callback has returned.
	w.lists <- one
	w.lists <- one

	select {
	case <-r1.C():
		t.Fatal("an unchanged list was sent on")
	default:
	}

	// A change reaches both.
	w.lists <- two

	for _, r := range []*discovery.Reader{r1, r2} {
		if ids, ok := next(t, r); !ok || len(ids) != 2 {
			t.Fatalf("after a change: %v %v", ids, ok)
		}
	}

	// A break ends every reader, with its reason.
	boom := errors.New("boom")
	w.breaks <- boom

	for _, r := range []*discovery.Reader{r1, r2} {
		if _, ok := next(t, r); ok || !errors.Is(r.Err(), boom) {
			t.Fatalf("after a break: open, or %v", r.Err())
		}

		r.Close() // closing an ended reader is harmless
	}

	waitFor(t, converge, "the broken watch to end", func() bool { return w.running.Load() == 0 })

	// The next reader starts a new watch; the last to leave stops it.
	r3 := feed.Subscribe()
	w.lists <- one

	if _, ok := next(t, r3); !ok || w.started.Load() != 2 {
		t.Fatalf("a new watch: %v, %d started", ok, w.started.Load())
	}

	r3.Close()
	waitFor(t, converge, "the watch to stop with its last reader", func() bool { return w.running.Load() == 0 })
}
