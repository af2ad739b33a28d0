// Package watchdog drives a Linux watchdog device (/dev/watchdog0) for a
// WatchdogTimerConfig, as Talos's WatchdogTimerController does: machined
// opens it, sets its timeout, feeds it three times per timeout while it
// runs and stops it with the magic close when the document goes or
// machined stops (a shutdown, a reboot), so a node whose PID 1 hangs is
// reset by the hardware while a node that stops on purpose is not.
package watchdog

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Timer is an open watchdog device: from the open on, the hardware resets
// the machine unless it is fed within the timeout.
type Timer struct {
	f *os.File
}

// Open opens the watchdog device at path, which arms it.
func Open(path string) (*Timer, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}

	t := &Timer{f: f}

	// A device that answers no watchdog ioctl is no watchdog: close it
	// at once (nothing armed a non-watchdog).
	if _, err := unix.IoctlGetWatchdogInfo(t.fd()); err != nil {
		f.Close()

		return nil, fmt.Errorf("watchdog: %s is not a watchdog device: %w", path, err)
	}

	return t, nil
}

// Path is the device's path.
func (t *Timer) Path() string { return t.f.Name() }

func (t *Timer) fd() int { return int(t.f.Fd()) }

// SetTimeout sets the timeout, in whole seconds, and returns the one the
// driver set (drivers round to what their hardware counts).
func (t *Timer) SetTimeout(d time.Duration) (time.Duration, error) {
	secs := int(d / time.Second)
	if secs < 1 {
		return 0, fmt.Errorf("watchdog %s: timeout %s is less than a second", t.Path(), d)
	}

	if err := unix.IoctlSetPointerInt(t.fd(), unix.WDIOC_SETTIMEOUT, secs); err != nil {
		return 0, fmt.Errorf("watchdog %s: set timeout %ds: %w", t.Path(), secs, err)
	}

	got, err := unix.IoctlGetInt(t.fd(), unix.WDIOC_GETTIMEOUT)
	if err != nil {
		return 0, fmt.Errorf("watchdog %s: get timeout: %w", t.Path(), err)
	}

	return time.Duration(got) * time.Second, nil
}

// Feed restarts the countdown.
func (t *Timer) Feed() error {
	if err := unix.IoctlWatchdogKeepalive(t.fd()); err != nil {
		return fmt.Errorf("watchdog %s: feed: %w", t.Path(), err)
	}

	return nil
}

// Close stops the watchdog ("magic close": a V written just before the
// close tells the driver it is closed on purpose) and closes the device.
// A driver built with nowayout keeps counting regardless.
func (t *Timer) Close() error {
	_, werr := t.f.WriteString("V")

	return errors.Join(werr, t.f.Close())
}
