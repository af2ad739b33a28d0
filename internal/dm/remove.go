package dm

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultRemoveTimeout is how long Remove retries a busy mapping, as
// cryptsetup does (25 tries, 0.2 s apart): a device that was just
// unmounted or closed can stay busy for a moment (a sync, a prober).
const DefaultRemoveTimeout = 5 * time.Second

// removeRetry paces the retries: the kernel offers no event for the
// last close of a block device, so Remove asks again.
const removeRetry = 100 * time.Millisecond

// RemoveOption changes Remove.
type RemoveOption func(*removeOptions)

type removeOptions struct {
	timeout  time.Duration
	deferred bool
}

// WithTimeout bounds the retries of a busy mapping (0: one attempt).
func WithTimeout(d time.Duration) RemoveOption {
	return func(o *removeOptions) { o.timeout = d }
}

// Deferred asks the kernel to remove a busy mapping at its last close
// instead of failing (dmsetup remove --deferred). Remove then returns
// nil at once; Status reports DeferredRemove until the mapping goes.
func Deferred() RemoveOption {
	return func(o *removeOptions) { o.deferred = true }
}

// Remove removes the mapping name and the /dev/mapper node Create made
// for it. A busy mapping is retried until the timeout (by default
// DefaultRemoveTimeout) and then fails with ErrBusy; a missing one fails
// with ErrNotFound.
func Remove(name string, opts ...RemoveOption) error {
	o := removeOptions{timeout: DefaultRemoveTimeout}
	for _, f := range opts {
		f(&o)
	}

	if err := checkName(name); err != nil {
		return err
	}

	c, err := sys.openControl()
	if err != nil {
		return err
	}
	defer c.Close()

	// The number tells which node in /dev/mapper is this mapping's.
	st := newBuffer(ioctlSize, name, "", 0)
	if err := c.ioctl(unix.DM_DEV_STATUS, st); err != nil {
		return opError("remove", name, err)
	}

	h, err := parseHeader(st)
	if err != nil {
		return fmt.Errorf("dm: remove %q: %w", name, err)
	}

	var flags uint32
	if o.deferred {
		flags = unix.DM_DEFERRED_REMOVE
	}

	deadline := time.Now().Add(o.timeout)
	attempts := 0

	for {
		attempts++

		err = c.ioctl(unix.DM_DEV_REMOVE, newBuffer(ioctlSize, name, "", flags))
		if !errors.Is(err, unix.EBUSY) || !time.Now().Before(deadline) {
			break
		}

		<-time.After(removeRetry)
	}

	switch {
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("dm: remove %q: %w (open count %d, %d attempts in %v): %w",
			name, ErrBusy, openCount(c, name), attempts, o.timeout, err)
	case err != nil:
		return opError("remove", name, err)
	}

	// A deferred removal of a busy mapping succeeds with the mapping
	// still there; its node stays usable by whoever holds it open, and
	// the name is not reusable until it goes, so the node goes now.
	if err := removeNode(sys.dev, name, unix.Major(h.Dev), unix.Minor(h.Dev)); err != nil {
		return fmt.Errorf("dm: remove %q: %w", name, err)
	}

	return nil
}

// openCount is for the busy error's message; -1 when unknown.
func openCount(c controller, name string) int {
	buf := newBuffer(ioctlSize, name, "", 0)
	if c.ioctl(unix.DM_DEV_STATUS, buf) != nil {
		return -1
	}

	h, err := parseHeader(buf)
	if err != nil {
		return -1
	}

	return int(h.OpenCount)
}
