//go:build e2e

package metaltest

import (
	"encoding/base64"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
)

// TestMetalBrokenCmdlineConfig: a config on the kernel command line that
// does not parse is reported on the console, and the node waits in
// maintenance mode, reachable, for a good one.
func TestMetalBrokenCmdlineConfig(t *testing.T) {
	broken := "version: v1alpha1\nmachine: [\n"
	url := "data:;base64," + base64.StdEncoding.EncodeToString([]byte(broken))

	n := newNode(t, nodeOptions{append: []string{"talos.config=" + url}})
	n.boot()

	// The source is named without its content (a config holds secrets).
	m := n.waitRe(regexp.MustCompile(`\[talos\] config from talos\.config=a data: URL \(\d+ bytes\) refused: (.+)$`), bootTimeout)
	if !strings.Contains(m[1], "line 2") {
		t.Errorf("the console error does not say where the config breaks: %q", m[1])
	}

	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)

	if strings.Contains(n.console(), "[talos] fatal") {
		t.Fatalf("a broken config was fatal:\n%s", n.console())
	}

	n.checkConsole()
}

// TestMetalFatal: a fatal boot error (a STATE partition holding another
// filesystem, which the node must not format over) is printed with its
// reason; then talosbox.fatal=poweroff powers the machine off (QEMU
// exits), and the default (wait) keeps PID 1 waiting. The kernel never
// panics.
func TestMetalFatal(t *testing.T) {
	tests := []struct {
		name   string
		append []string
		last   string
		exits  bool
	}{
		{"poweroff", nil, "[talos] powering off (talosbox.fatal=poweroff)", true},
		// The later duplicate wins, as in the kernel: the default.
		{"wait", []string{"talosbox.fatal=wait"}, "[talos] the node has stopped: power-cycle it", false},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, nodeOptions{disk: true, append: tt.append})
			foreignState(t, n.disk)

			n.boot()
			n.wait("[talos] fatal: initialize sequence: phase state: task mountStatePartition: STATE (/dev/vda5) holds xfs, not ext4: refusing to format over it", bootTimeout)

			if tt.exits {
				n.waitExit(tt.last)
				return
			}

			n.wait(tt.last, bootTimeout)
			n.checkConsole()

			select {
			case <-n.vm.Done():
				t.Fatalf("QEMU exited: PID 1 did not wait\n%s", n.vm.Tail(20))
			default:
			}
		})
	}
}

// foreignState installs the system layout on the image at path, then
// puts an XFS superblock where STATE's ext4 was: someone else's data.
func foreignState(t *testing.T, path string) {
	t.Helper()

	plan, err := disk.Install(path, disk.SystemLayout, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}

	state := plan[4]
	if state.Label != disk.LabelState {
		t.Fatalf("partition 5 is %s", state.Label)
	}

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if err := disk.Wipe(disk.Region{File: f, Offset: state.Offset(), Size: state.Bytes()}); err != nil {
		t.Fatal(err)
	}

	if _, err := f.WriteAt([]byte("XFSB"), state.Offset()); err != nil {
		t.Fatal(err)
	}
}

// testWriter logs what is written to it.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
