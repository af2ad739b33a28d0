//go:build e2e

package metaltest

import (
	"os"
	"strings"
	"time"
)

// consoleDashboard checks the dashboard a node booted with
// talos.dashboard.disabled=0 and talos.dashboard.tty=ttyS1 draws there
// (QEMU writes that port to tty): the node's summary, read through apid's
// local socket, while the node waits in maintenance mode.
func (n *node) consoleDashboard(tty string) {
	t := n.t
	t.Helper()

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
			return
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
