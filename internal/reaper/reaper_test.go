package reaper_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/reaper"
)

func TestMain(m *testing.M) {
	// Orphans of our children come to us, as they would to PID 1.
	if err := reaper.SetSubreaper(); err != nil {
		panic(err)
	}

	os.Exit(m.Run())
}

// gone waits until pid is no longer in the process table.
func gone(t *testing.T, pid int) {
	t.Helper()

	deadline := time.Now().Add(10 * time.Second)

	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			return
		}

		if time.Now().After(deadline) {
			stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			t.Fatalf("pid %d still present: %s", pid, stat)
		}

		time.Sleep(5 * time.Millisecond)
	}
}

func TestOrphanedGrandchildIsReaped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	go reaper.Run(ctx)

	// sh starts a grandchild and exits at once: the grandchild is
	// re-parented to us and, when it exits, becomes our zombie.
	cmd := exec.Command("/bin/sh", "-c", "sleep 0.2 & echo $!")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}

	if err := reaper.StartCommand(cmd); err != nil {
		t.Fatal(err)
	}

	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}

	// The tracked child's status is still ours to collect.
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wait for the tracked child: %v", err)
	}

	reaper.Done(cmd.Process.Pid)

	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}

	gone(t, grandchild)
}

func TestTrackedChildrenKeepTheirStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	go reaper.Run(ctx)

	// Many short children exiting with distinct codes while orphans are
	// being reaped: every Wait must see its own child's status.
	var wg sync.WaitGroup

	for i := range 40 {
		wg.Go(func() {
			cmd := exec.Command("/bin/sh", "-c", "(true &); exit "+strconv.Itoa(i%7))
			if err := reaper.StartCommand(cmd); err != nil {
				t.Error(err)
				return
			}

			err := cmd.Wait()
			reaper.Done(cmd.Process.Pid)

			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Errorf("child %d: %v (its status was stolen)", i, err)
				return
			}

			if code != i%7 {
				t.Errorf("child %d exited %d, want %d", i, code, i%7)
			}
		})

		reaper.Reap()
	}

	wg.Wait()
}
