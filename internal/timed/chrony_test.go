package timed

import (
	"github.com/talosbox/talosbox/internal/timed/timedtest"
)

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer = timedtest.LockedBuffer

var (
	startChrony = timedtest.StartChrony
	freeUDPPort = timedtest.FreeUDPPort
)
