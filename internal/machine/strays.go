package machine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/disk"
)

// releaseRuntime ends what outlives the services on a metal node before
// its volumes go: containerd leaves the pods' shims and containers running
// when it stops (by design, so a restart keeps them), and their rootfs
// overlays and shm mounts under the runtime's state dirs hold files on
// EPHEMERAL open. As PID 1 machined kills every other process, waits for
// them to be gone, then unmounts the state trees.
func (n *Node) releaseRuntime(_ context.Context, w io.Writer) error {
	if os.Getpid() == 1 {
		if err := unix.Kill(-1, unix.SIGKILL); err != nil && err != unix.ESRCH {
			return fmt.Errorf("kill the processes left: %w", err)
		}

		if left := waitForNoProcesses("/proc", 10*time.Second); left > 0 {
			fmt.Fprintf(w, "[talos] %d processes still running after SIGKILL\n", left)
		}
	}

	rt := n.Runtime()
	for _, dir := range []string{rt.CRIState, rt.SystemState} {
		if err := disk.UnmountTree(dir); err != nil {
			fmt.Fprintf(w, "[talos] %v\n", err)
		}
	}

	return nil
}

// waitForNoProcesses waits until /proc shows no user process other than
// this one, and returns how many were left at the deadline. A kernel
// thread and a zombie have an empty cmdline; the reaper collects zombies.
func waitForNoProcesses(procRoot string, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)

	for {
		left := userProcesses(procRoot)
		if left == 0 || time.Now().After(deadline) {
			return left
		}

		time.Sleep(20 * time.Millisecond)
	}
}

func userProcesses(procRoot string) int {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0
	}

	self := os.Getpid()
	n := 0

	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}

		if cmd, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline")); err == nil && len(cmd) > 0 {
			n++
		}
	}

	return n
}
