//go:build e2e

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// console collects a process's output lines and lets a test wait for one.
type console struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func (c *console) add(line string) {
	c.mu.Lock()
	c.lines = append(c.lines, line)
	close(c.more)
	c.more = make(chan struct{})
	c.mu.Unlock()
}

// wait returns the first line containing s, failing at the deadline.
func (c *console) wait(t *testing.T, s string, timeout time.Duration) string {
	t.Helper()

	return c.waitAfter(t, 0, s, timeout)
}

func (c *console) index(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()

	for i, l := range c.lines {
		if strings.Contains(l, s) {
			return i
		}
	}

	return -1
}

func (c *console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()

	return strings.Join(c.lines, "\n")
}

// childOf finds a process whose parent is ppid and whose name is comm.
func childOf(ppid int, comm string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}

		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}

		s := string(stat)
		open, closeParen := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')

		if open < 0 || closeParen < open {
			continue
		}

		fields := strings.Fields(s[closeParen+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(ppid) && (comm == "" || s[open+1:closeParen] == comm) {
			return pid
		}
	}

	return 0
}

func waitPID(t *testing.T, what string, find func() int) int {
	t.Helper()

	deadline := time.Now().Add(10 * time.Second)

	for {
		if pid := find(); pid != 0 {
			return pid
		}

		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}

		time.Sleep(10 * time.Millisecond)
	}
}

// TestMachinedAsPID1 runs the real binary as init of new PID, mount, UTS,
// IPC and network namespaces, in container mode with a generated config.
func TestMachinedAsPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (unshare of PID and mount namespaces); CI runs as root")
	}

	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required (util-linux; scripts/install-deps.sh installs it)", tool)
		}
	}

	bin := buildBinary(t)
	dir := t.TempDir()
	links := filepath.Join(dir, "bin")

	runBinary(t, bin, 0, "--install", links)
	runBinary(t, bin, 0, "talosctl", "gen", "config", "pid1", "https://10.5.0.2:6443", "-o", dir)

	cmd := exec.Command("unshare", "--fork", "--pid", "--mount", "--uts", "--ipc", "--net", "--mount-proc",
		filepath.Join(links, "init"), "--platform", "container", "--state-dir", filepath.Join(dir, "node"),
		"--config", filepath.Join(dir, "controlplane.yaml"))

	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}

	cmd.Stderr = cmd.Stdout

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	exited := make(chan error, 1)
	con := &console{more: make(chan struct{})}

	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			con.add(sc.Text())
		}

		exited <- cmd.Wait()
	}()

	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // already gone when the test passed
	})

	// Every service is up, as the Services resources say.
	services := con.wait(t, "[talos] services: ", 30*time.Second)

	// Both containerd instances are this binary's containerd applet,
	// healthy by their gRPC health service.
	want := []string{"machined=Running", "timed=Skipped", "containerd=Running healthy", "cri=Running healthy"}

	for _, w := range want {
		if !strings.Contains(services, w) {
			t.Errorf("services line %q lacks %q", services, w)
		}
	}

	initPID := waitPID(t, "the node's init process", func() int { return childOf(cmd.Process.Pid, "") })

	// An orphan: sh starts a grandchild and exits; the grandchild is
	// re-parented to our init, which must reap it when it exits.
	nsenter := exec.Command("nsenter", "--target", strconv.Itoa(initPID), "--pid", "/bin/sh", "-c", "sleep 2 </dev/null >/dev/null 2>&1 & exit 0")
	if outb, err := nsenter.CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v: %s", err, outb)
	}

	orphan := waitPID(t, "the orphan to be adopted by init", func() int { return childOf(initPID, "sleep") })

	waitPID(t, "the orphan to be reaped", func() int {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); os.IsNotExist(err) {
			return 1
		}

		return 0
	})

	// SIGTERM: services stop, dependents first, and init exits 0.
	if err := syscall.Kill(initPID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("init exited with %v; console:\n%s", err, con)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("init did not exit after SIGTERM; console:\n%s", con)
	}

	con.wait(t, "[talos] machined stopped", time.Second)

	machinedStop := con.index("service[machined](Finished)")
	if machinedStop < 0 {
		t.Fatalf("machined service never finished; console:\n%s", con)
	}

	if c := con.index("service[containerd](Finished)"); c >= 0 && c > machinedStop {
		t.Errorf("containerd (which depends on machined) stopped after it:\n%s", con)
	}
}
