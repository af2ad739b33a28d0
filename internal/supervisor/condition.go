package supervisor

import (
	"context"
	"errors"
	"fmt"

	"github.com/talosbox/talosbox/internal/bus"
)

// Condition is something a service waits for before it starts. String
// completes "Waiting for ...", e.g. `etcd spec`.
type Condition interface {
	// Wait returns nil once the condition holds, or an error (ctx.Err()
	// when ctx is done).
	Wait(ctx context.Context) error
	String() string
}

type resourceCondition struct {
	st   *bus.Store
	p    bus.Pointer
	pred func(bus.Resource) bool
	desc string
}

// ResourceCondition holds once the resource at p exists and pred (nil
// means any) accepts it. pred gets shared snapshots: it must not modify
// them. desc is the String(); empty gives `resource <p> to exist`.
func ResourceCondition(st *bus.Store, p bus.Pointer, pred func(bus.Resource) bool, desc string) Condition {
	if desc == "" {
		desc = fmt.Sprintf("resource %s to exist", p)
	}

	return &resourceCondition{st: st, p: p, pred: pred, desc: desc}
}

func (c *resourceCondition) String() string { return c.desc }

// Wait follows a bus watch of the resource: the watch delivers the current
// state first, so there is nothing to poll.
func (c *resourceCondition) Wait(ctx context.Context) error {
	for {
		ok, err := c.watchOnce(ctx)
		if ok || err != nil {
			return err
		}
		// The watch overran; a new one starts from the current state.
	}
}

func (c *resourceCondition) watchOnce(ctx context.Context) (bool, error) {
	w, err := c.st.Watch(ctx, c.p)
	if err != nil {
		return false, fmt.Errorf("waiting for %s: %w", c.desc, err)
	}

	defer w.Close()

	for ev := range w.Events() {
		switch ev.Type {
		case bus.Created, bus.Updated:
			if c.pred == nil || c.pred(ev.Resource) {
				return true, nil
			}
		case bus.Errored:
			if errors.Is(ev.Err, bus.ErrWatchOverrun) {
				return false, nil
			}

			return false, fmt.Errorf("waiting for %s: %w", c.desc, ev.Err)
		}
	}

	return false, ctx.Err()
}
