package discovery

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// follower keeps the Controller's one watch of its registry running on a
// goroutine of its own: it re-watches after a break, with backoff, and
// holds the latest list while the watch is up. While it is down the
// Controller polls, as it does for a registry that cannot watch.
type follower struct {
	reg    Registry
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	list []cluster.AffiliateSpec
	live bool // list is what the registry holds now, as far as the watch knows
}

// follow starts watching w (which is reg); notify is called, without
// blocking, whenever there is a new list.
func follow(ctx context.Context, reg Registry, w Watcher, notify func(), log *slog.Logger) *follower {
	ctx, cancel := context.WithCancel(ctx)
	f := &follower{reg: reg, cancel: cancel, done: make(chan struct{})}

	go f.run(ctx, w, notify, log)

	return f
}

func (f *follower) run(ctx context.Context, w Watcher, notify func(), log *slog.Logger) {
	defer close(f.done)

	backoff := watchBackoffMin

	for {
		started := time.Now()
		err := w.Watch(ctx, func(list []cluster.AffiliateSpec) {
			f.mu.Lock()
			f.list, f.live = list, true
			f.mu.Unlock()

			notify()
		})

		f.mu.Lock()
		wasLive := f.live
		f.live = false
		f.mu.Unlock()

		if ctx.Err() != nil {
			return
		}

		log.Debug("discovery watch broke: polling until it is back", "error", err)

		// A watch that held for a while was a good one: come back
		// quickly. One that breaks as soon as it starts backs off.
		if wasLive && time.Since(started) > watchBackoffMax {
			backoff = watchBackoffMin
		}

		if !sleep(ctx, jitter(backoff)) {
			return
		}

		backoff = min(2*backoff, watchBackoffMax)
	}
}

// latest is the watch's list, and whether the watch is up.
func (f *follower) latest() ([]cluster.AffiliateSpec, bool) {
	if f == nil {
		return nil, false
	}

	f.mu.Lock()
	defer f.mu.Unlock()

	return f.list, f.live
}

// stop ends the watch and waits for its goroutine.
func (f *follower) stop() {
	if f == nil {
		return
	}

	f.cancel()
	<-f.done
}

// sameRegistry says whether a and b are the same registry, so its watch
// can go on. Registry returns a fresh value on every refresh; values of a
// comparable type (EtcdRegistry, a pointer) compare equal when they are
// the same registry. Any other type counts as a new registry each time.
func sameRegistry(a, b Registry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}

	t := reflect.TypeOf(a)
	if t != reflect.TypeOf(b) || !t.Comparable() {
		return false
	}

	return a == b
}
