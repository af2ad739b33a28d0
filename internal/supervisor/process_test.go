package supervisor_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/logring"
	"github.com/talosbox/talosbox/internal/reaper"
	"github.com/talosbox/talosbox/internal/supervisor"
)

func shell(script string, tweak func(*supervisor.ProcessOptions)) supervisor.Runner {
	opts := supervisor.ProcessOptions{Path: "/bin/sh", Args: []string{"-c", script}}
	if tweak != nil {
		tweak(&opts)
	}

	return supervisor.ProcessRunner(opts)
}

func shellName(script string) string {
	return fmt.Sprintf("Process(%q)", []string{"/bin/sh", "-c", script})
}

// follow streams a service's log lines; the stream ends with the test.
func follow(t *testing.T, ring *logring.Ring) <-chan string {
	t.Helper()

	rd := ring.Reader(logring.ReadOptions{TailLines: -1, Follow: true})
	lines := make(chan string, 100)
	done := make(chan struct{})

	go func() {
		defer close(done)
		defer close(lines)

		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	t.Cleanup(func() {
		rd.Close()
		<-done
	})

	return lines
}

// expectLine returns the first line matching re, with its submatches.
func expectLine(t *testing.T, lines <-chan string, re string) []string {
	t.Helper()

	rx := regexp.MustCompile(re)
	deadline := time.After(waitTimeout)

	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("log ended before a line matching %q", re)
			}

			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("timed out waiting for a log line matching %q", re)
		}
	}
}

func logsOf(t *testing.T, h *harness, id string) *logring.Ring {
	t.Helper()

	ring, err := h.sup.Logs(id)
	if err != nil {
		t.Fatal(err)
	}

	return ring
}

func TestProcessLogsAndSIGTERM(t *testing.T) {
	h := newHarness(t, nil)

	const script = `trap 'echo terminating; exit 0' TERM; echo ready; echo oops >&2; sleep 1000 & wait`

	h.load(t, supervisor.Service{ID: "svc", Runner: shell(script, nil)})
	h.start(t, "svc")

	lines := follow(t, logsOf(t, h, "svc"))
	expectLine(t, lines, `^ready$`)
	expectLine(t, lines, `^oops$`)
	h.stop(t, "svc")
	expectLine(t, lines, `^terminating$`)

	got := h.rec.lines("svc")
	if len(got) < 3 {
		t.Fatalf("events: %q", got)
	}

	name := shellName(script)
	if !regexp.MustCompile(`^Running: Process ` + regexp.QuoteMeta(name) + ` started with PID \d+$`).MatchString(got[len(got)-3]) {
		t.Errorf("start event %q", got[len(got)-3])
	}

	equalLines(t, "stop events", got[len(got)-2:], []string{
		"Stopping: Sending SIGTERM to " + name,
		"Finished: Service finished successfully",
	})
}

// alive reports whether pid is a live process (zombies are dead).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}

	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')

	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// waitDead polls /proc until pid is gone; the kernel delivers SIGKILL
// asynchronously and nothing else signals the end of a grandchild.
func waitDead(t *testing.T, pid int) {
	t.Helper()

	deadline := time.Now().Add(waitTimeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still alive", pid)
		}

		time.Sleep(5 * time.Millisecond)
	}
}

func TestProcessIgnoringSIGTERMIsKilledWithItsGroup(t *testing.T) {
	h := newHarness(t, nil)

	const script = `trap '' TERM; sleep 1000 & echo "grandchild $!"; wait`

	h.load(t, supervisor.Service{ID: "svc", Runner: shell(script, func(o *supervisor.ProcessOptions) {
		o.StopTimeout = 100 * time.Millisecond
	})})
	h.start(t, "svc")

	m := expectLine(t, follow(t, logsOf(t, h, "svc")), `^grandchild (\d+)$`)

	grandchild, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}

	started := time.Now()

	h.stop(t, "svc")

	if elapsed := time.Since(started); elapsed < 100*time.Millisecond {
		t.Errorf("stopped after %s, before StopTimeout", elapsed)
	}

	got := h.rec.lines("svc")
	name := shellName(script)
	equalLines(t, "stop events", got[len(got)-3:], []string{
		"Stopping: Sending SIGTERM to " + name,
		"Stopping: Sending SIGKILL to " + name,
		"Finished: Service finished successfully",
	})

	waitDead(t, grandchild)
}

func TestProcessExit(t *testing.T) {
	dir := t.TempDir()

	for _, tc := range []struct {
		name   string
		runner supervisor.Runner
		final  supervisor.State
		event  string // regexp
		log    string
	}{
		{
			name: "exit status", runner: shell("echo bye; exit 3", nil), final: supervisor.Failed,
			event: `^Failed running service: process \d+ exited: exit status 3$`, log: "bye\n",
		},
		{
			name: "clean exit", runner: shell("echo done", nil), final: supervisor.Finished,
			event: `^Service finished successfully$`, log: "done\n",
		},
		{
			name: "env and dir", final: supervisor.Finished, event: `^Service finished successfully$`, log: "bar " + dir + "\n",
			runner: shell(`echo "$FOO $(pwd)"`, func(o *supervisor.ProcessOptions) {
				o.Env = []string{"FOO=bar"}
				o.Dir = dir
			}),
		},
		{
			name: "missing binary", final: supervisor.Failed,
			runner: supervisor.ProcessRunner(supervisor.ProcessOptions{Path: "/nonexistent/daemon"}),
			event:  `^Failed running service: starting Process\(\["/nonexistent/daemon"\]\): .*no such file or directory$`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.load(t, supervisor.Service{ID: "svc", Restart: supervisor.Once, Runner: tc.runner})
			h.start(t, "svc")
			h.rec.waitState(t, "svc", tc.final)

			st, _ := h.sup.Status("svc")
			if last := st.Events[len(st.Events)-1].Message; !regexp.MustCompile(tc.event).MatchString(last) {
				t.Errorf("final event %q, want %s", last, tc.event)
			}

			if got := string(logsOf(t, h, "svc").Bytes()); got != tc.log {
				t.Errorf("log %q, want %q", got, tc.log)
			}
		})
	}
}

func TestProcessCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching credentials needs root")
	}

	h := newHarness(t, nil)
	nobody := uint32(65534)

	h.load(t, supervisor.Service{ID: "svc", Restart: supervisor.Once, Runner: shell("id -u; id -g; id -G", func(o *supervisor.ProcessOptions) {
		o.UID, o.GID = &nobody, &nobody
	})})
	h.start(t, "svc")
	h.rec.waitState(t, "svc", supervisor.Finished)

	if got := string(logsOf(t, h, "svc").Bytes()); got != "65534\n65534\n65534\n" {
		t.Fatalf("id output %q", got)
	}
}

// cgroup2Mount finds a writable cgroup2 hierarchy, or skips the test.
func cgroup2Mount(t *testing.T) string {
	t.Helper()

	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Skip(err)
	}

	for l := range strings.Lines(string(mounts)) {
		if f := strings.Fields(l); len(f) > 2 && f[2] == "cgroup2" {
			return f[1]
		}
	}

	t.Skip("no cgroup2 hierarchy")

	return ""
}

func TestProcessCgroup(t *testing.T) {
	mnt := cgroup2Mount(t)
	name := fmt.Sprintf("talosbox-supervisor-test-%d", os.Getpid())
	dir := filepath.Join(mnt, name)

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}

	t.Cleanup(func() { _ = os.Remove(dir) })

	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil || !strings.Contains(string(own), "0::/\n") {
		t.Skipf("test process is not at the cgroup2 root: %q", own)
	}

	h := newHarness(t, nil)
	h.load(t, supervisor.Service{ID: "svc", Restart: supervisor.Once, Runner: shell("cat /proc/self/cgroup", func(o *supervisor.ProcessOptions) {
		o.Cgroup = dir
	})})
	h.start(t, "svc")
	h.rec.waitState(t, "svc", supervisor.Finished)

	if got := string(logsOf(t, h, "svc").Bytes()); !strings.Contains(got, "0::/"+name+"\n") {
		t.Fatalf("child's cgroups:\n%s\nwant it in %s", got, name)
	}
}

const helperEnv = "TALOSBOX_SUPERVISOR_HELPER"

// TestProcessHelperParent is the parent machined in
// TestProcessDiesWithParent: it starts a child, prints its PID and waits
// to be killed.
func TestProcessHelperParent(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}

	sup := supervisor.New(supervisor.Options{})
	if err := sup.Load(supervisor.Service{ID: "child", Runner: shell(`echo "pid $$"; exec sleep 1000`, nil)}); err != nil {
		t.Fatal(err)
	}

	if err := sup.Start("child"); err != nil {
		t.Fatal(err)
	}

	ring, _ := sup.Logs("child")
	m := expectLine(t, follow(t, ring), `^pid (\d+)$`)
	fmt.Printf("CHILD %s\n", m[1])

	select {}
}

func TestProcessDiesWithParent(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^TestProcessHelperParent$", "-test.count=1")
	parent.Env = append(os.Environ(), helperEnv+"=1")

	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}

	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
	})

	pids := make(chan int, 1)

	go func() {
		defer close(pids)

		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if pid, ok := strings.CutPrefix(sc.Text(), "CHILD "); ok {
				n, _ := strconv.Atoi(pid)
				pids <- n

				break
			}
		}

		_, _ = io.Copy(io.Discard, out)
	}()

	var child int

	select {
	case child = <-pids:
	case <-time.After(waitTimeout):
		t.Fatal("the helper never reported its child")
	}

	if child == 0 {
		t.Fatal("the helper exited without reporting its child")
	}

	if !alive(child) {
		t.Fatalf("child %d died before its parent", child)
	}

	// machined dying without any chance to clean up: only Pdeathsig
	// takes the child down.
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	waitDead(t, child)
}

// As PID 1, machined reaps orphans; the process runner's own children
// must keep their exit status for cmd.Wait.
func TestProcessExitStatusSurvivesReaper(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	reaped := make(chan struct{})

	go func() {
		defer close(reaped)
		reaper.Run(ctx)
	}()

	t.Cleanup(func() {
		cancel()
		<-reaped
	})

	h := newHarness(t, nil)
	h.load(t, supervisor.Service{ID: "svc", Restart: supervisor.Once, Runner: shell("exit 3", nil)})

	for i := 1; i <= 20; i++ {
		h.start(t, "svc")
		evs := h.rec.wait(t, fmt.Sprintf("run %d to fail", i), func(evs []recorded) bool {
			n := 0
			for _, e := range evs {
				if e.Event.State == supervisor.Failed {
					n++
				}
			}

			return n == i
		})

		if last := evs[len(evs)-1].Event.Message; !strings.HasSuffix(last, "exit status 3") {
			t.Fatalf("run %d: %q", i, last)
		}
	}
}
