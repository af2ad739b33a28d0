package kmsglog

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is the kernel log device.
const DefaultPath = "/dev/kmsg"

// Reader reads kernel log records as they are logged, from the oldest the
// kernel still holds when it was opened.
type Reader struct {
	f    *os.File
	rc   syscall.RawConn
	boot time.Time
	buf  []byte
}

// Open opens the kernel log device at path (DefaultPath when empty).
func Open(path string) (*Reader, error) {
	if path == "" {
		path = DefaultPath
	}

	// Non-blocking, so the runtime poller parks reads and Close wakes them.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("kernel log: open %s: %w", path, err)
	}

	f := os.NewFile(uintptr(fd), path)

	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()

		return nil, fmt.Errorf("kernel log: %w", err)
	}

	return &Reader{f: f, rc: rc, boot: bootTime(), buf: make([]byte, 8192)}, nil
}

// bootTime is when CLOCK_BOOTTIME (the records' clock) started, in UTC.
func bootTime() time.Time {
	var ts unix.Timespec

	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return now.UTC()
	}

	return now.Add(-time.Duration(ts.Nano())).UTC()
}

// Next waits for the next record. Records the kernel dropped before they
// were read (its ring wrapped) are skipped; a record that does not parse
// is skipped too. After Close it returns os.ErrClosed.
func (r *Reader) Next() (Record, error) {
	for {
		var (
			n    int
			rerr error
		)

		if err := r.rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), r.buf)

			return !errors.Is(rerr, unix.EAGAIN)
		}); err != nil {
			return Record{}, fmt.Errorf("kernel log: %w", err)
		}

		switch {
		case errors.Is(rerr, unix.EPIPE):
			continue
		case rerr != nil:
			return Record{}, fmt.Errorf("kernel log: read: %w", rerr)
		}

		rec, err := ParseRecord(r.buf[:n], r.boot)
		if err != nil {
			continue
		}

		return rec, nil
	}
}

// Close ends the reader; a Next waiting returns.
func (r *Reader) Close() error {
	return r.f.Close()
}
