package dhcp

import (
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// linkWatch follows whether one interface is usable (administratively up
// with carrier) through rtnetlink notifications. Every transition closes
// the current changed channel, so a session started while the link was up
// learns of a flap even if the link is up again by the time it looks.
type linkWatch struct {
	name string
	done chan struct{} // closed by stop: ends the subscription
	lost chan struct{} // closed when the subscription has ended

	stopOnce sync.Once

	mu      sync.Mutex
	up      bool
	index   int // the interface's index while it exists under name
	changed chan struct{}
}

// watchLink subscribes in the network namespace of the calling OS thread.
// The interface need not exist yet: it is down until it appears.
func watchLink(name string, logf func(string, ...any)) (*linkWatch, error) {
	w := &linkWatch{
		name:    name,
		done:    make(chan struct{}),
		lost:    make(chan struct{}),
		changed: make(chan struct{}),
	}

	ch := make(chan netlink.LinkUpdate, 32)

	err := netlink.LinkSubscribeWithOptions(ch, w.done, netlink.LinkSubscribeOptions{
		// The dump of existing links comes through ch after subscribing,
		// so no transition can fall between reading the state and
		// watching it.
		ListExisting: true,
		ErrorCallback: func(err error) {
			select {
			case <-w.done: // the socket was closed by stop: expected
			default:
				logf("dhcp: %s: link updates: %v", name, err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to link updates: %w", err)
	}

	go func() {
		defer close(w.lost)

		// The library closes ch when the subscription ends, on stop or
		// on a receive error.
		for u := range ch {
			w.update(u)
		}
	}()

	return w, nil
}

func (w *linkWatch) update(u netlink.LinkUpdate) {
	if u.Link == nil || u.Attrs() == nil {
		return
	}

	name, index := u.Attrs().Name, int(u.Index)

	w.mu.Lock()
	defer w.mu.Unlock()

	var up bool

	switch {
	case name == w.name:
		up = u.Header.Type != unix.RTM_DELLINK && u.Flags&unix.IFF_UP != 0 && u.Flags&unix.IFF_RUNNING != 0
		w.index = index

		if u.Header.Type == unix.RTM_DELLINK {
			w.index = 0
		}
	case w.index != 0 && index == w.index:
		// Renamed away: the name we serve is gone.
		w.index = 0
	default:
		return
	}

	if up != w.up {
		w.up = up
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

// state is whether the link is usable and a channel closed at its next
// transition.
func (w *linkWatch) state() (bool, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()

	return w.up, w.changed
}

func (w *linkWatch) stop() {
	w.stopOnce.Do(func() { close(w.done) })
}
