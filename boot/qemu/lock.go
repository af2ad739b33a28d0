package qemu

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Exclusive takes the host-wide guest lock: one group of guests at a time
// on this machine, across test packages and processes (go test runs
// packages in parallel). Two guests in parallel are fine on the 2-core
// machines this project runs on; four roughly double each one's boot
// time, past the deadlines the tests give a boot. A test that boots its guests together takes it once
// for all of them, so two tests never wait on each other's half. It
// blocks until the lock is free; release it after killing the guests.
func Exclusive() (release func(), err error) {
	p := filepath.Join(os.TempDir(), "talosbox-qemu.lock")

	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("guest lock: %w", err)
	}

	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}

	if err != nil {
		f.Close()
		return nil, fmt.Errorf("guest lock %s: %w", p, err)
	}

	// Closing the file drops the lock, also when the process dies.
	return func() { f.Close() }, nil
}
