package timed

import (
	"bytes"
	"sync"

	"github.com/talosbox/talosbox/internal/timed/timedtest"
)

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.String()
}

var (
	startChrony = timedtest.StartChrony
	freeUDPPort = timedtest.FreeUDPPort
)
