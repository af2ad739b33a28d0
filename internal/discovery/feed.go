package discovery

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// Feed shares one watch of a registry among any number of readers: trustd
// serves a stream to every worker, and one etcd watch for all of them
// keeps the control plane's cost flat in the number of workers. The first
// reader starts the watch and the last one to leave stops it. A broken
// watch ends every reader, so each worker falls back to polling and comes
// back on its own schedule, perhaps to another control plane.
type Feed struct {
	w Watcher

	mu      sync.Mutex
	readers map[*Reader]struct{}
	list    []cluster.AffiliateSpec
	have    bool // list came from the running watch
	// gen numbers the watches: a watch that ended after its readers left
	// must not touch the state of the next one.
	gen  uint64
	stop context.CancelFunc // ends the running watch; nil when none runs
}

// NewFeed is a feed of w's watch.
func NewFeed(w Watcher) *Feed { return &Feed{w: w, readers: map[*Reader]struct{}{}} }

// Reader is one reader of a Feed.
type Reader struct {
	f *Feed
	// c holds one signal at most: lists that came while the reader was
	// busy are coalesced into the latest, which is all a reader needs.
	c   chan struct{}
	err error // why the watch ended, set before c is closed
}

// Subscribe adds a reader; it is signalled at once if the feed already has
// a list. Close it when done.
func (f *Feed) Subscribe() *Reader {
	f.mu.Lock()
	defer f.mu.Unlock()

	r := &Reader{f: f, c: make(chan struct{}, 1)}
	f.readers[r] = struct{}{}

	if f.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f.gen++
		f.stop = cancel

		go f.run(ctx, f.gen)
	} else if f.have {
		r.c <- struct{}{}
	}

	return r
}

func (f *Feed) run(ctx context.Context, gen uint64) {
	err := f.w.Watch(ctx, func(list []cluster.AffiliateSpec) {
		f.mu.Lock()
		defer f.mu.Unlock()

		if gen != f.gen || (f.have && slices.EqualFunc(list, f.list, cluster.AffiliateSpec.Equal)) {
			return
		}

		f.list, f.have = list, true

		for r := range f.readers {
			select {
			case r.c <- struct{}{}:
			default:
			}
		}
	})

	f.mu.Lock()
	defer f.mu.Unlock()

	if gen != f.gen {
		return // stopped: the readers are gone already
	}

	if err == nil {
		err = errors.New("discovery: watch ended")
	}

	for r := range f.readers {
		r.err = err
		close(r.c)
	}

	f.reset()
}

// reset forgets the running watch; f.mu is held.
func (f *Feed) reset() {
	f.stop()
	clear(f.readers)
	f.stop, f.list, f.have = nil, nil, false
	f.gen++
}

// C receives when there is a new list, and is closed when the watch broke.
func (r *Reader) C() <-chan struct{} { return r.c }

// List is the latest list; false before the first.
func (r *Reader) List() ([]cluster.AffiliateSpec, bool) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()

	return slices.Clone(r.f.list), r.f.have
}

// Err is why C was closed.
func (r *Reader) Err() error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()

	return r.err
}

// Close removes the reader; the last one stops the watch.
func (r *Reader) Close() {
	f := r.f

	f.mu.Lock()
	defer f.mu.Unlock()

	if _, ok := f.readers[r]; !ok {
		return
	}

	delete(f.readers, r)

	if len(f.readers) == 0 {
		f.reset()
	}
}
