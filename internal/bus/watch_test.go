package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/talosbox/talosbox/internal/bus"
)

// TestWatchOrderingManyWritersManyWatchers checks the watch contract under
// load: every watcher gets the initial list, then each resource's versions
// in order, with no gap and no duplicate, and ends with the store's state.
func TestWatchOrderingManyWritersManyWatchers(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{WatchQueue: 1 << 16})

	const (
		preexisting = 5
		writers     = 8
		updates     = 300
		watchers    = 8
	)

	for i := range preexisting {
		if err := s.Create(ctx, newRes(fmt.Sprintf("pre-%d", i), 0)); err != nil {
			t.Fatal(err)
		}
	}

	type seen struct {
		versions map[string]uint64
		err      error
	}

	results := make([]seen, watchers)

	var wwg sync.WaitGroup

	start := make(chan struct{})

	for w := range watchers {
		// Half the watchers join before the writes start, half while
		// they run: both must see a consistent stream.
		join := func() *bus.Watcher {
			wt, err := s.WatchKind(ctx, kind)
			if err != nil {
				t.Fatal(err)
			}

			return wt
		}

		var wt *bus.Watcher
		if w%2 == 0 {
			wt = join()
		}

		wwg.Go(func() {
			if wt == nil {
				<-start
				wt = join()
			}

			defer wt.Close()

			results[w] = seen{versions: map[string]uint64{}}
			results[w].err = consume(wt, results[w].versions, writers+preexisting)
		})
	}

	close(start)

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("w-%d", w)
			r := newRes(id, 0)

			if err := s.Create(ctx, r); err != nil {
				t.Error(err)
				return
			}

			for i := 1; i < updates; i++ {
				r.TypedSpec().Value = i
				if err := s.Update(ctx, r); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}

	wg.Wait()
	wwg.Wait()

	for w, res := range results {
		if res.err != nil {
			t.Errorf("watcher %d: %v", w, res.err)
			continue
		}

		for i := range writers {
			if v := res.versions[fmt.Sprintf("w-%d", i)]; v != updates {
				t.Errorf("watcher %d: last version of w-%d = %d, want %d", w, i, v, updates)
			}
		}
	}
}

// consume reads until the watcher has seen the final version of total
// resources, checking order as it goes.
func consume(w *bus.Watcher, versions map[string]uint64, total int) error {
	bootstrapped := false
	done := 0

	for ev := range w.Events() {
		switch ev.Type {
		case bus.Bootstrapped:
			if bootstrapped {
				return errors.New("second Bootstrapped event")
			}

			bootstrapped = true

			continue
		case bus.Errored:
			return ev.Err
		}

		md := ev.Resource.Metadata()
		prev, known := versions[md.ID]

		switch {
		case !bootstrapped && ev.Type != bus.Created:
			return fmt.Errorf("%s event before Bootstrapped", ev.Type)
		case ev.Type == bus.Created && known:
			return fmt.Errorf("%s created twice", md.ID)
		case ev.Type == bus.Updated && md.Version != prev+1:
			return fmt.Errorf("%s: version %d after %d (gap or duplicate)", md.ID, md.Version, prev)
		case ev.Type == bus.Updated && ev.Old.Metadata().Version != prev:
			return fmt.Errorf("%s: old version %d, last seen %d", md.ID, ev.Old.Metadata().Version, prev)
		}

		versions[md.ID] = md.Version

		if md.Version == 300 || md.ID[:3] == "pre" {
			done++
		}

		if done == total {
			return nil
		}
	}

	return errors.New("channel closed early")
}

func TestWatchOverrunFailsOnlyTheSlowWatcher(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	slow, err := s.WatchKind(ctx, kind, bus.WithQueue(4))
	if err != nil {
		t.Fatal(err)
	}

	fast, err := s.WatchKind(ctx, kind, bus.WithQueue(100))
	if err != nil {
		t.Fatal(err)
	}

	r := newRes("a", 0)
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}

	for i := 1; i < 10; i++ {
		r.TypedSpec().Value = i
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err) // the writer is never blocked or failed by a slow watcher
		}
	}

	// Bootstrapped plus 4 queued events, then the error, then close.
	var types []bus.EventType
	for ev := range slow.Events() {
		types = append(types, ev.Type)
		if ev.Type == bus.Errored && !errors.Is(ev.Err, bus.ErrWatchOverrun) {
			t.Fatalf("errored with %v", ev.Err)
		}
	}

	want := []bus.EventType{bus.Bootstrapped, bus.Created, bus.Updated, bus.Updated, bus.Updated, bus.Errored}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("slow watcher saw %v, want %v", types, want)
	}

	recv(t, fast) // Bootstrapped

	for i := range 10 {
		ev := recv(t, fast)
		if value(ev.Resource) != i {
			t.Fatalf("fast watcher event %d has value %d", i, value(ev.Resource))
		}
	}

	slow.Close() // closing after an overrun is harmless
}

func TestWatchContextEndClosesChannel(t *testing.T) {
	s := bus.NewStore(bus.StoreOptions{})
	ctx, cancel := context.WithCancel(testCtx(t))

	w, err := s.WatchKind(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}

	if ev := recv(t, w); ev.Type != bus.Bootstrapped {
		t.Fatalf("first event %v", ev.Type)
	}

	cancel()

	for range w.Events() { //nolint:revive // draining until close is the assertion
	}

	// Writes after the watcher left must not panic on a closed channel.
	if err := s.Create(testCtx(t), newRes("a", 1)); err != nil {
		t.Fatal(err)
	}
}

func TestWatchSingleAndLabelFiltered(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	if err := s.Create(ctx, newRes("a", 1)); err != nil {
		t.Fatal(err)
	}

	one, err := s.Watch(ctx, ptr("a"))
	if err != nil {
		t.Fatal(err)
	}

	q, _ := bus.ParseLabelQuery("tier=gold")

	gold, err := s.WatchKind(ctx, kind, bus.WithWatchLabelQuery(q))
	if err != nil {
		t.Fatal(err)
	}

	if ev := recv(t, one); ev.Type != bus.Created || value(ev.Resource) != 1 {
		t.Fatalf("single watch initial = %v", ev.Type)
	}

	recv(t, one) // Bootstrapped

	if ev := recv(t, gold); ev.Type != bus.Bootstrapped {
		t.Fatalf("label watch saw %v before bootstrap; 'a' has no label", ev.Type)
	}

	b := newRes("b", 2)
	b.Metadata().Labels.Set("tier", "gold")

	if err := s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}

	// b's label moves away: the watcher still hears about it (it matched before).
	b.Metadata().Labels.Set("tier", "silver")

	if err := s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}

	if err := s.Destroy(ctx, ptr("a")); err != nil {
		t.Fatal(err)
	}

	if ev := recv(t, one); ev.Type != bus.Destroyed || ev.Resource.Metadata().ID != "a" {
		t.Fatalf("single watch got %v for %s", ev.Type, ev.Resource.Metadata().ID)
	}

	for _, want := range []bus.EventType{bus.Created, bus.Updated} {
		if ev := recv(t, gold); ev.Type != want || ev.Resource.Metadata().ID != "b" {
			t.Fatalf("label watch got %v for %s, want %v for b", ev.Type, ev.Resource.Metadata().ID, want)
		}
	}

	select {
	case ev := <-gold.Events():
		t.Fatalf("label watch got an event for an unlabelled resource: %v %s", ev.Type, ev.Resource.Metadata().ID)
	default:
	}
}
