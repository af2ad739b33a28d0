package containers

import (
	"os"
	"testing"

	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// TestMain lets the test binary be the containerd (and shim) the daemon
// tests start.
func TestMain(m *testing.M) {
	containerdtest.Main()
	os.Exit(m.Run())
}
