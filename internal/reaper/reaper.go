// Package reaper collects zombies for PID 1. Orphans re-parented to init
// must be waited for, or they stay in the process table for ever; but a
// blind wait(-1) would also steal the exit status of children that
// os/exec is waiting on. So children started through StartCommand are
// tracked, and the reaper only waits for zombies it does not track.
package reaper

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	// mu is held for reading while a tracked child starts, and for writing
	// while reaping, so a new child is always tracked before the reaper
	// can see it as a zombie.
	mu      sync.RWMutex
	tracked = map[int]struct{}{}
)

// SetSubreaper makes this process adopt orphaned descendants, as PID 1
// does; used when machined is not PID 1, and by tests.
func SetSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// StartCommand starts cmd so that Run never reaps it: call Done with its
// PID once cmd.Wait has returned. Every child machined starts must go
// through here.
func StartCommand(cmd *exec.Cmd) error {
	mu.RLock()
	defer mu.RUnlock()

	if err := cmd.Start(); err != nil {
		return err
	}

	trackedMu.Lock()
	tracked[cmd.Process.Pid] = struct{}{}
	trackedMu.Unlock()

	return nil
}

// trackedMu guards the map itself; mu only orders starts against reaping.
var trackedMu sync.Mutex

// Done forgets a tracked child after its Wait returned.
func Done(pid int) {
	trackedMu.Lock()
	delete(tracked, pid)
	trackedMu.Unlock()
}

// Run reaps untracked zombie children on every SIGCHLD (and once a second,
// in case signals were coalesced) until ctx ends.
func Run(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)

	tick := time.NewTicker(time.Second)
	defer tick.Stop()

	for {
		Reap()

		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-tick.C:
		}
	}
}

// Reap waits for every zombie child that no one else is waiting for, and
// returns their PIDs.
func Reap() []int {
	mu.Lock()
	defer mu.Unlock()

	self := os.Getpid()

	var reaped []int

	for _, pid := range zombieChildren(self) {
		trackedMu.Lock()
		_, mine := tracked[pid]
		trackedMu.Unlock()

		if mine {
			continue
		}

		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			reaped = append(reaped, pid)
		}
	}

	return reaped
}

// zombieChildren lists children of parent in state Z, from /proc.
func zombieChildren(parent int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}

	var out []int

	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}

		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}

		// "pid (comm) S ppid ...": comm may hold spaces and parentheses,
		// so parse after the last ')'.
		s := string(stat)

		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}

		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[0] != "Z" {
			continue
		}

		if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == parent {
			out = append(out, pid)
		}
	}

	return out
}
