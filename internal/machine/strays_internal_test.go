package machine

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestUserProcesses counts a /proc laid out as the kernel does: user
// processes have a cmdline, kernel threads and zombies an empty one, and
// this process does not count.
func TestUserProcesses(t *testing.T) {
	proc := t.TempDir()

	for name, cmdline := range map[string]string{
		"2":                       "",                  // kthreadd
		"40":                      "",                  // a zombie
		"41":                      "/bin/runc\x00init", // a stray
		"42":                      "containerd-shim-runc-v2\x00-namespace\x00k8s.io",
		strconv.Itoa(os.Getpid()): "/init",
		"self":                    "/init",
	} {
		if err := os.MkdirAll(filepath.Join(proc, name), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(filepath.Join(proc, name, "cmdline"), []byte(cmdline), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if got := userProcesses(proc); got != 2 {
		t.Errorf("userProcesses = %d, want 2 (the stray and the shim)", got)
	}

	if got := waitForNoProcesses(proc, 50*time.Millisecond); got != 2 {
		t.Errorf("waitForNoProcesses at its deadline = %d, want 2", got)
	}

	for _, pid := range []string{"41", "42"} {
		if err := os.RemoveAll(filepath.Join(proc, pid)); err != nil {
			t.Fatal(err)
		}
	}

	if got := waitForNoProcesses(proc, time.Minute); got != 0 {
		t.Errorf("waitForNoProcesses with none left = %d, want 0", got)
	}
}
