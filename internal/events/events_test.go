package events

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

func publishN(r *Ring, n int) []Event {
	out := make([]Event, n)
	for i := range n {
		out[i] = r.Publish(TypeTask, fmt.Sprintf("event %d", i), map[string]string{"i": strconv.Itoa(i)})
	}

	return out
}

// take reads n events or fails.
func take(t *testing.T, ch <-chan Event, n int) []Event {
	t.Helper()

	out := make([]Event, 0, n)
	timeout := time.After(10 * time.Second)

	for len(out) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d of %d events", len(out), n)
			}

			out = append(out, ev)
		case <-timeout:
			t.Fatalf("timed out after %d of %d events", len(out), n)
		}
	}

	return out
}

func messages(evs []Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Message
	}

	return out
}

func TestIDsSortLikeEvents(t *testing.T) {
	r := New(10)

	// A clock going backwards must not break the order.
	base := time.Unix(1_700_000_000, 0)
	times := []time.Time{base, base.Add(time.Second), base.Add(-time.Hour), base.Add(time.Millisecond)}
	i := 0
	r.now = func() time.Time { t := times[i%len(times)]; i++; return t }

	evs := publishN(r, 20)

	if !sort.SliceIsSorted(evs, func(a, b int) bool { return evs[a].ID < evs[b].ID }) {
		t.Fatalf("IDs out of order: %v", evs)
	}

	for j := 1; j < len(evs); j++ {
		if evs[j].ID == evs[j-1].ID {
			t.Fatalf("duplicate ID %s", evs[j].ID)
		}
	}
}

func TestTailModes(t *testing.T) {
	// Every case gets the same fresh ring: events 3..7 of 8 are retained.
	// A fixed clock makes the IDs of every fresh ring the same.
	clock := time.Unix(1_700_000_000, 0)
	fresh := func() (*Ring, []Event) {
		r := New(5)
		r.now = func() time.Time { return clock }

		return r, publishN(r, 8)
	}

	_, evs := fresh()

	cases := []struct {
		name string
		opts WatchOptions
		want []string
	}{
		{"tail 2", WatchOptions{TailEvents: 2}, []string{"event 6", "event 7"}},
		{"tail more than retained", WatchOptions{TailEvents: 100}, []string{"event 3", "event 4", "event 5", "event 6", "event 7"}},
		{"tail all", WatchOptions{TailEvents: -1}, []string{"event 3", "event 4", "event 5", "event 6", "event 7"}},
		{"after id", WatchOptions{TailID: evs[5].ID}, []string{"event 6", "event 7"}},
		{"after an overwritten id", WatchOptions{TailID: evs[0].ID}, []string{"event 3", "event 4", "event 5", "event 6", "event 7"}},
		{"id wins over count", WatchOptions{TailID: evs[6].ID, TailEvents: -1}, []string{"event 7"}},
		{"seconds", WatchOptions{TailSeconds: 60}, []string{"event 3", "event 4", "event 5", "event 6", "event 7"}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := fresh()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			ch := r.Watch(ctx, tc.opts)
			got := messages(take(t, ch, len(tc.want)))

			// Then it follows: the next published event comes next.
			r.Publish(TypeTask, "follow "+tc.name, nil)

			got = append(got, take(t, ch, 1)[0].Message)
			want := append(append([]string{}, tc.want...), "follow "+tc.name)

			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

func TestTailSecondsSkipsOldEvents(t *testing.T) {
	r := New(10)
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }

	r.Publish(TypeTask, "old", nil)
	now = now.Add(time.Minute)
	r.Publish(TypeTask, "new", nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	got := take(t, r.Watch(ctx, WatchOptions{TailSeconds: 30}), 1)
	if got[0].Message != "new" {
		t.Fatalf("got %q", got[0].Message)
	}
}

func TestNoTailStartsAtNextEvent(t *testing.T) {
	r := New(10)
	publishN(r, 3)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ch := r.Watch(ctx, WatchOptions{})
	r.Publish(TypeTask, "next", nil)

	if got := take(t, ch, 1)[0].Message; got != "next" {
		t.Fatalf("got %q", got)
	}
}

// A watcher that does not read while the ring wraps loses events: it is
// told how many through a dropped event and then gets the retained ones;
// the publisher never waits for it.
func TestSlowWatcherGetsDroppedEvent(t *testing.T) {
	r := New(4)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ch := r.Watch(ctx, WatchOptions{})
	evs := publishN(r, 100)

	var (
		dropped Event
		real    []Event
		lost    int
	)

	// The watcher may have handed over (or be holding) a few early
	// events before falling behind: read until the last one arrives.
	for len(real) == 0 || real[len(real)-1].ID != evs[99].ID {
		ev := take(t, ch, 1)[0]
		if ev.Type == TypeDropped {
			dropped = ev
			n, _ := strconv.Atoi(ev.Fields["dropped"])
			lost += n

			continue
		}

		real = append(real, ev)
	}

	if dropped.Type != TypeDropped {
		t.Fatal("no dropped event")
	}

	if lost+len(real) != 100 {
		t.Fatalf("lost %d + received %d != 100", lost, len(real))
	}

	if fmt.Sprint(messages(real[len(real)-4:])) != fmt.Sprint(messages(evs[96:])) {
		t.Fatalf("after the gap got %q", messages(real))
	}

	// The dropped event's ID sorts between the lost and the retained, so
	// resuming after it replays exactly what is retained.
	if !(evs[95].ID <= dropped.ID && dropped.ID < evs[96].ID) {
		t.Fatalf("dropped ID %s not between %s and %s", dropped.ID, evs[95].ID, evs[96].ID)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()

	if got := messages(take(t, r.Watch(ctx2, WatchOptions{TailID: dropped.ID}), 4)); fmt.Sprint(got) != fmt.Sprint(messages(evs[96:])) {
		t.Fatalf("resume got %q", got)
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	r := New(10)
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.Watch(ctx, WatchOptions{})

	cancel()

	for range ch { //nolint:revive // drain until closed
	}

	r.mu.Lock()
	n := len(r.subs)
	r.mu.Unlock()

	if n != 0 {
		t.Fatalf("%d subscriptions left", n)
	}
}

func TestConcurrentPublishersAndWatchers(t *testing.T) {
	r := New(DefaultCapacity)

	const (
		publishers = 4
		perPub     = 500
		watchers   = 8
	)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var wg sync.WaitGroup

	results := make([][]Event, watchers)

	for w := range watchers {
		ch := r.Watch(ctx, WatchOptions{})

		wg.Go(func() {
			for ev := range ch {
				results[w] = append(results[w], ev)
				if ev.Type == "done" {
					return
				}
			}
		})
	}

	var pub sync.WaitGroup
	for p := range publishers {
		pub.Go(func() {
			for i := range perPub {
				r.Publish(TypeTask, fmt.Sprintf("%d/%d", p, i), nil)
			}
		})
	}

	pub.Wait()
	r.Publish("done", "", nil)
	wg.Wait()

	for w, evs := range results {
		seen := 0

		for i, ev := range evs {
			if i > 0 && ev.ID <= evs[i-1].ID && ev.Type != TypeDropped && evs[i-1].Type != TypeDropped {
				t.Fatalf("watcher %d: out of order at %d", w, i)
			}

			if ev.Type == TypeDropped {
				n, _ := strconv.Atoi(ev.Fields["dropped"])
				seen += n
			} else {
				seen++
			}
		}

		if seen != publishers*perPub+1 {
			t.Fatalf("watcher %d accounted for %d events, want %d", w, seen, publishers*perPub+1)
		}
	}
}

func BenchmarkPublish(b *testing.B) {
	r := New(DefaultCapacity)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ch := r.Watch(ctx, WatchOptions{})
	go func() {
		for range ch { //nolint:revive // a consumer
		}
	}()

	b.ReportAllocs()

	for b.Loop() {
		r.Publish(TypeTask, "x", nil)
	}
}
