//go:build e2e

package guesttest

import (
	"os"
	"testing"
)

// TestMain is two programs: inside a guest (PID 1) it is the test init
// and never returns; on the host it runs the tests, which boot guests.
func TestMain(m *testing.M) {
	// PID 1 alone is not proof: a test binary could be a container's
	// entrypoint. The guest image always carries its spec.
	if _, err := os.Stat(specPath); err == nil && os.Getpid() == 1 {
		guestMain()
	}

	code := m.Run()

	cleanupGuestBinary()
	os.Exit(code)
}
