package bus

import (
	"context"
	"sync"
)

// EventType says what happened to a resource.
type EventType uint8

// Event types, in the order a watcher may see them.
const (
	Created EventType = iota + 1
	Updated
	Destroyed
	// Bootstrapped ends the initial list a new watcher receives.
	Bootstrapped
	// Errored is the last event of a failed watch; Event.Err says why.
	Errored
)

func (t EventType) String() string {
	switch t {
	case Created:
		return "Created"
	case Updated:
		return "Updated"
	case Destroyed:
		return "Destroyed"
	case Bootstrapped:
		return "Bootstrapped"
	case Errored:
		return "Errored"
	}

	return "Unknown"
}

// Event is one change seen by a watcher.
type Event struct {
	Type EventType
	// Resource is the new snapshot; for Destroyed, the last one.
	Resource Resource
	// Old is the snapshot replaced by an Updated event.
	Old Resource
	// Err is set on Errored.
	Err error
}

// sub is one subscription in a bucket. Either ch (a watcher's bounded
// queue) or notify (a controller's coalesced wake-up) is set. Subs are only
// touched under their bucket's lock, so each has exactly one sender.
type sub struct {
	ch     chan Event
	limit  int // events ch may hold; one more slot is kept for Errored
	notify chan struct{}
	id     string
	query  *LabelQuery
	closed bool
}

func (s *sub) wants(ev *Event) bool {
	if s.id != "" && ev.Resource.Metadata().ID != s.id {
		return false
	}

	if s.query != nil {
		return s.query.Matches(ev.Resource.Metadata().Labels) || (ev.Old != nil && s.query.Matches(ev.Old.Metadata().Labels))
	}

	return true
}

// publish hands ev to every interested subscriber without blocking: a
// watcher whose queue is full gets Errored and is dropped. Caller holds
// b.mu for writing.
func (b *bucket) publish(ev Event) {
	for i := 0; i < len(b.subs); {
		s := b.subs[i]
		if !s.wants(&ev) {
			i++
			continue
		}

		if s.notify != nil {
			select {
			case s.notify <- struct{}{}:
			default:
			}

			i++

			continue
		}

		if len(s.ch) < s.limit {
			s.ch <- ev
			i++

			continue
		}

		s.ch <- Event{Type: Errored, Err: ErrWatchOverrun}
		close(s.ch)
		s.closed = true
		b.drop(i)
	}
}

func (b *bucket) drop(i int) {
	last := len(b.subs) - 1
	b.subs[i] = b.subs[last]
	b.subs[last] = nil
	b.subs = b.subs[:last]
}

func (b *bucket) remove(s *sub) {
	for i, x := range b.subs {
		if x == s {
			b.drop(i)
			return
		}
	}
}

// WatchOption tunes a watch.
type WatchOption func(*watchOptions)

type watchOptions struct {
	queue int
	query *LabelQuery
}

// WithQueue sets how many events may wait for the consumer before the
// watch fails with ErrWatchOverrun.
func WithQueue(n int) WatchOption {
	return func(o *watchOptions) { o.queue = n }
}

// WithWatchLabelQuery delivers only events whose resource matches q before
// or after the change.
func WithWatchLabelQuery(q LabelQuery) WatchOption {
	return func(o *watchOptions) { o.query = &q }
}

// Watcher receives the events of one watch. Events() is closed when the
// watch's context ends, on Close, and after an Errored event.
type Watcher struct {
	b    *bucket
	s    *sub
	stop func() bool
	once sync.Once
}

// Events is the watcher's ordered event stream.
func (w *Watcher) Events() <-chan Event { return w.s.ch }

// Close ends the watch. Events already queued stay readable.
func (w *Watcher) Close() {
	w.stop()
	w.close()
}

// close is what the context's end triggers; it must not touch w.stop,
// which may not be assigned yet when the context is already done.
func (w *Watcher) close() {
	w.once.Do(func() {
		w.b.mu.Lock()

		if !w.s.closed {
			w.b.remove(w.s)
			close(w.s.ch)
			w.s.closed = true
		}

		w.b.mu.Unlock()
	})
}

// WatchKind watches every resource of a kind. The watcher first receives a
// Created event for each existing resource (sorted by ID) and then
// Bootstrapped; after that, every change in version order.
func (s *Store) WatchKind(ctx context.Context, k Kind, opts ...WatchOption) (*Watcher, error) {
	return s.watch(ctx, k, "", opts)
}

// Watch watches one resource: a Created event if it exists, Bootstrapped,
// then every change to it.
func (s *Store) Watch(ctx context.Context, p Pointer, opts ...WatchOption) (*Watcher, error) {
	if p.ID == "" {
		return nil, opError("watch", p, ErrInvalid, "empty id")
	}

	return s.watch(ctx, p.Kind(), p.ID, opts)
}

func (s *Store) watch(ctx context.Context, k Kind, id string, opts []WatchOption) (*Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	o := watchOptions{queue: s.watchQueue}
	for _, opt := range opts {
		opt(&o)
	}

	if o.queue <= 0 {
		return nil, &Error{Op: "watch", Target: k.String(), Err: ErrInvalid, Detail: "queue length must be positive"}
	}

	b := s.bucket(k)

	b.mu.Lock()

	var initial []Resource

	if id == "" {
		initial = b.snapshot(o.query)
	} else if r, ok := b.items[id]; ok && (o.query == nil || o.query.Matches(r.Metadata().Labels)) {
		initial = []Resource{r}
	}

	// The initial list does not count against the queue: a consumer that
	// keeps up is never failed because the kind happened to be large.
	limit := len(initial) + 1 + o.queue
	sb := &sub{ch: make(chan Event, limit+1), limit: limit, id: id, query: o.query}

	for _, r := range initial {
		sb.ch <- Event{Type: Created, Resource: r}
	}

	sb.ch <- Event{Type: Bootstrapped}
	b.subs = append(b.subs, sb)

	b.mu.Unlock()

	w := &Watcher{b: b, s: sb}
	w.stop = context.AfterFunc(ctx, w.close)

	return w, nil
}

// subscribe registers a coalescing notification on a kind (or one ID of
// it) for the controller runtime; cancel removes it.
func (s *Store) subscribe(k Kind, id string, notify chan struct{}) (cancel func()) {
	b := s.bucket(k)
	sb := &sub{notify: notify, id: id}

	b.mu.Lock()
	b.subs = append(b.subs, sb)
	b.mu.Unlock()

	return func() {
		b.mu.Lock()
		b.remove(sb)
		b.mu.Unlock()
	}
}
