//go:build e2e

package metaltest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMetalConsoleDashboard boots a node with talos.dashboard.disabled=0
// and its dashboard on the second serial port (ttyS1, which QEMU writes
// to a file): the dashboard draws the node's summary there, read through
// apid's local socket, while the node waits in maintenance mode.
func TestMetalConsoleDashboard(t *testing.T) {
	tty := filepath.Join(t.TempDir(), "ttyS1.out")

	n := newNode(t, nodeOptions{
		disk:     true,
		append:   []string{"talos.dashboard.disabled=0", "talos.dashboard.tty=ttyS1", "talos.dashboard.term=vt100"},
		qemuArgs: []string{"-serial", "file:" + tty},
	})

	n.boot()
	n.wait(markMaintenance, bootTimeout)
	n.wait("[talos] service[dashboard](Running)", bootTimeout)

	// The screen is ANSI: cursor moves and attributes between runs of
	// text. The words checked are each drawn in one run.
	want := []string{"talosbox", "STAGE", "Summary", "Monitor", "Network Config"}

	deadline := time.Now().Add(bootTimeout)

	for {
		b, _ := os.ReadFile(tty)
		text := string(b)

		missing := ""

		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w

				break
			}
		}

		if missing == "" {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("the console dashboard on ttyS1 never drew %q (%d bytes):\n%q", missing, len(b), tail(text, 2000))
		}

		time.Sleep(500 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}

	return s
}
