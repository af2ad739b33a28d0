package timed

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// stepThreshold is NTP's step threshold (RFC 5905 STEPT): smaller offsets
// are slewed, which never makes time jump; at the kernel's 500 ppm slew
// rate 128 ms takes about four minutes, well inside DefaultInterval.
const stepThreshold = 128 * time.Millisecond

// clock corrects the system clock by an offset.
type clock interface {
	step(offset time.Duration) error
	slew(offset time.Duration) error
}

// systemClock changes CLOCK_REALTIME; it needs CAP_SYS_TIME and is only
// used on metal.
type systemClock struct{}

func (systemClock) step(offset time.Duration) error {
	// Reading and writing back adds the few microseconds between the two
	// calls to the error: noise next to a step of 128 ms or more.
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		return fmt.Errorf("clock_gettime: %w", err)
	}

	ts = unix.NsecToTimespec(ts.Nano() + offset.Nanoseconds())
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		return fmt.Errorf("clock_settime: %w", err)
	}

	return nil
}

// adjOffsetSingleshot is the kernel's ADJ_OFFSET_SINGLESHOT: adjtime(3)'s
// one-off slew, which golang.org/x/sys does not name.
const adjOffsetSingleshot = 0x8001

func (systemClock) slew(offset time.Duration) error {
	tx := unix.Timex{Modes: adjOffsetSingleshot, Offset: offset.Microseconds()}
	if _, err := unix.Adjtimex(&tx); err != nil {
		return fmt.Errorf("adjtimex: %w", err)
	}

	return nil
}
