// Package events is the node's event stream, as Talos's
// `talosctl events`: a ring of the most recent events that late watchers
// can tail (by count, by ID or by age) before following new ones.
//
// Publishing never waits for watchers. Each watcher reads the ring at its
// own pace through a cursor; one that falls so far behind that the ring
// has overwritten what it had not read yet skips the gap and receives a
// synthetic EventsDropped event saying how many it lost.
package events

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"
)

// DefaultCapacity is how many events a ring keeps, as in Talos.
const DefaultCapacity = 1000

// Event types. The machine.* names are Talos's, so clients filtering on
// them work unchanged.
const (
	TypeServiceState    = "machine.ServiceStateEvent"
	TypeSequence        = "machine.SequenceEvent"
	TypePhase           = "machine.PhaseEvent"
	TypeTask            = "machine.TaskEvent"
	TypeConfigLoadError = "machine.ConfigLoadErrorEvent"
	TypeMachineStatus   = "machine.MachineStatusEvent"
	// TypeDropped is synthetic: it tells one watcher that it lost events.
	TypeDropped = "talosbox.EventsDroppedEvent"
)

// Event is one thing that happened on the node.
type Event struct {
	// ID sorts like the events: a later event has a greater ID, also
	// across restarts of the process (the ID starts with the time).
	ID      string
	Time    time.Time
	Type    string
	Message string
	Fields  map[string]string
}

// WatchOptions choose where a watch starts. TailID, when set, wins over
// TailSeconds, which wins over TailEvents; with none set the watch starts
// with the next published event.
type WatchOptions struct {
	// TailEvents replays this many of the newest retained events; any
	// negative value replays all of them.
	TailEvents int
	// TailID replays the retained events published after this ID. An ID
	// older than everything retained replays everything.
	TailID string
	// TailSeconds replays the events of the last this-many seconds.
	TailSeconds int
}

// Ring holds the most recent events. The zero value is not usable; use New.
type Ring struct {
	mu     sync.Mutex
	buf    []Event
	next   uint64 // sequence number of the next event; event s is at buf[s%len]
	lastMS int64  // the ID clock never goes backwards
	subs   map[chan struct{}]struct{}
	now    func() time.Time
}

// New makes a ring keeping capacity events (DefaultCapacity when <= 0).
func New(capacity int) *Ring {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}

	return &Ring{buf: make([]Event, capacity), subs: map[chan struct{}]struct{}{}, now: time.Now}
}

// Publish records an event and wakes the watchers; it never blocks on
// them. The returned event carries its ID and time.
func (r *Ring) Publish(typ, message string, fields map[string]string) Event {
	r.mu.Lock()
	defer r.mu.Unlock()

	now := r.now()

	// A millisecond clock that never goes backwards, then the sequence
	// number: fixed-width hex keeps string order equal to event order.
	ms := max(now.UnixMilli(), r.lastMS)
	r.lastMS = ms

	ev := Event{
		ID:      fmt.Sprintf("%012x%010x", ms, r.next),
		Time:    now,
		Type:    typ,
		Message: message,
		Fields:  maps.Clone(fields),
	}

	r.buf[r.next%uint64(len(r.buf))] = ev
	r.next++

	for ch := range r.subs {
		select {
		case ch <- struct{}{}:
		default: // already woken; the watcher reads everything new at once
		}
	}

	return ev
}

// oldestLocked is the sequence number of the oldest retained event.
func (r *Ring) oldestLocked() uint64 {
	if r.next > uint64(len(r.buf)) {
		return r.next - uint64(len(r.buf))
	}

	return 0
}

// startLocked turns the options into the sequence number to start from.
func (r *Ring) startLocked(opts WatchOptions) uint64 {
	oldest := r.oldestLocked()

	switch {
	case opts.TailID != "":
		// IDs sort like sequence numbers: the first retained event whose
		// ID is greater is where the replay starts.
		s := oldest
		for s < r.next && r.at(s).ID <= opts.TailID {
			s++
		}

		return s
	case opts.TailSeconds > 0:
		since := r.now().Add(-time.Duration(opts.TailSeconds) * time.Second)
		s := r.next
		for s > oldest && !r.at(s-1).Time.Before(since) {
			s--
		}

		return s
	case opts.TailEvents < 0:
		return oldest
	case opts.TailEvents > 0:
		return max(oldest, r.next-min(r.next, uint64(opts.TailEvents)))
	}

	return r.next
}

func (r *Ring) at(seq uint64) Event { return r.buf[seq%uint64(len(r.buf))] }

// watchBatch bounds how many events a watcher copies per lock hold, so a
// replay of the whole ring does not hold up publishers.
const watchBatch = 64

// Watch replays the events the options select and then follows new ones,
// until ctx ends; the channel is closed then. A watcher that falls behind
// by more than the ring's capacity gets a TypeDropped event (whose ID is
// the last lost event's, so resuming after it is exact) instead of the
// lost ones.
func (r *Ring) Watch(ctx context.Context, opts WatchOptions) <-chan Event {
	out := make(chan Event)
	wake := make(chan struct{}, 1)

	r.mu.Lock()
	cursor := r.startLocked(opts)
	r.subs[wake] = struct{}{}
	r.mu.Unlock()

	go func() {
		defer close(out)
		defer func() {
			r.mu.Lock()
			delete(r.subs, wake)
			r.mu.Unlock()
		}()

		batch := make([]Event, 0, watchBatch)

		for {
			batch = batch[:0]

			r.mu.Lock()

			if oldest := r.oldestLocked(); cursor < oldest {
				lost := oldest - cursor

				batch = append(batch, Event{
					ID:      droppedID(r.at(oldest).ID, oldest-1),
					Time:    r.now(),
					Type:    TypeDropped,
					Message: fmt.Sprintf("events dropped: %d event(s) were overwritten before this watcher read them", lost),
					Fields:  map[string]string{"dropped": strconv.FormatUint(lost, 10)},
				})
				cursor = oldest
			}

			for cursor < r.next && len(batch) < cap(batch) {
				batch = append(batch, r.at(cursor))
				cursor++
			}

			r.mu.Unlock()

			for _, ev := range batch {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}

			if len(batch) > 0 {
				continue // there may be more; look again before sleeping
			}

			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}()

	return out
}

// droppedID is an ID between the last lost event's and the oldest
// retained one's: the latter's time with the lost sequence number. A
// client resuming after it (TailID) gets exactly what is retained.
func droppedID(oldestRetained string, seq uint64) string {
	if len(oldestRetained) != 22 {
		return oldestRetained
	}

	return fmt.Sprintf("%s%010x", oldestRetained[:12], seq)
}
