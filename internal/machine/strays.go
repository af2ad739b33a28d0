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

// ownsRuntime says whether the node's pods are its own to end: on metal
// and on a Docker node (PID 1 of a container that owns its root) every
// other process is a service, a shim or a container of the node. A
// machined sharing a host's filesystem (tests) runs no Kubernetes.
func (n *Node) ownsRuntime() bool {
	return n.opts.Platform.IsMetal() || n.opts.Platform.OwnRoot
}

// podGrace is how long the pods' processes get between SIGTERM and
// SIGKILL when the node goes down.
const podGrace = 10 * time.Second

// releaseRuntime ends what outlives the services before the volumes go,
// on metal and on Docker nodes alike: containerd leaves the pods' shims
// and containers running when it stops (by design, so a restart keeps
// them), so a reset node would keep serving a control plane with no etcd
// behind it, and their rootfs overlays and shm mounts under the runtime's
// state dirs hold files on EPHEMERAL open. As PID 1 machined asks every
// other process to stop (SIGTERM), kills what is left after podGrace,
// waits for them to be gone, then unmounts the state trees.
func (n *Node) releaseRuntime(_ context.Context, w io.Writer) error {
	if os.Getpid() == 1 {
		left := userProcesses("/proc")

		if err := unix.Kill(-1, unix.SIGTERM); err != nil && err != unix.ESRCH {
			return fmt.Errorf("stop the processes left: %w", err)
		}

		if waitForNoProcesses("/proc", podGrace) > 0 {
			if err := unix.Kill(-1, unix.SIGKILL); err != nil && err != unix.ESRCH {
				return fmt.Errorf("kill the processes left: %w", err)
			}
		}

		if still := waitForNoProcesses("/proc", 10*time.Second); still > 0 {
			fmt.Fprintf(w, "[talos] %d processes still running after SIGKILL\n", still)
		} else if left > 0 {
			fmt.Fprintf(w, "[talos] stopped %d processes the services left (pods, containers, shims)\n", left)
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
