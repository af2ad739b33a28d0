// Package applettest runs applets as processes of their own in tests, the
// way a user runs them: the test binary re-executes itself as the applet
// (Main and Command), or any command is started (Start), and the test
// waits for lines of its output, signals it and checks its exit status.
// Every process is killed at cleanup, and its output is logged when the
// test failed.
package applettest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/applet"
)

// appletVar names the applet a re-executed test binary runs.
const appletVar = "TALOSBOX_APPLETTEST"

// Main is the TestMain of a package whose tests run its applet as a
// process: started by Command, the test binary runs the applet, with the
// same SIGTERM and SIGINT handling as the real binary's main, instead of
// the tests.
func Main(m *testing.M, a applet.Applet) {
	if os.Getenv(appletVar) == a.Name {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := a.Main(ctx, os.Args[1:], applet.OSEnv())

		stop()
		os.Exit(code)
	}

	os.Exit(m.Run())
}

// Command prepares the test binary to run applet name (whose package's
// TestMain calls Main) with args.
func Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), appletVar+"="+name)

	return cmd
}

// Process is a started command and the lines it printed on stdout and
// stderr, merged.
type Process struct {
	t    testing.TB
	cmd  *exec.Cmd
	name string

	mu     sync.Mutex
	lines  []string
	more   chan struct{} // closed and replaced when a line arrives or the process ends
	exited bool          // all output is read and code is set
	code   int

	done chan struct{} // closed once exited is set
}

// Start starts cmd and kills it at cleanup if it still runs. cmd must not
// have Stdout or Stderr set.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()

	p := &Process{t: t, cmd: cmd, name: strings.Join(cmd.Args, " "), more: make(chan struct{}), done: make(chan struct{})}

	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w

	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}

	read := make(chan struct{})

	go func() {
		defer close(read)

		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)

		for sc.Scan() {
			p.add(sc.Text())
		}

		io.Copy(io.Discard, r) //nolint:errcheck // drain an over-long line so the process never blocks
	}()

	go func() {
		err := cmd.Wait()
		w.Close() //nolint:errcheck // ends the reader

		<-read

		p.mu.Lock()
		p.code, p.exited = exitCode(err), true
		close(p.more)
		p.more = make(chan struct{})
		p.mu.Unlock()

		close(p.done)
	}()

	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill() //nolint:errcheck // the test is over; it may just have exited
			<-p.done
		}

		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.Output())
		}
	})

	return p
}

func exitCode(err error) int {
	var ee *exec.ExitError

	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}

		return ee.ExitCode()
	default:
		return -1
	}
}

func (p *Process) add(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()

	p.lines = append(p.lines, line)
	close(p.more)
	p.more = make(chan struct{})
}

// Output is everything the process printed so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()

	return strings.Join(p.lines, "\n")
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// WaitLine returns the first line containing s, failing the test if the
// process exits or timeout passes first.
func (p *Process) WaitLine(s string, timeout time.Duration) string {
	p.t.Helper()

	line, err := p.waitLine(s, timeout)
	if err != nil {
		p.t.Fatalf("%s: %v\noutput:\n%s", p.name, err, p.Output())
	}

	return line
}

func (p *Process) waitLine(s string, timeout time.Duration) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()

	for seen := 0; ; {
		p.mu.Lock()
		lines, more, exited, code := p.lines, p.more, p.exited, p.code
		p.mu.Unlock()

		for ; seen < len(lines); seen++ {
			if strings.Contains(lines[seen], s) {
				return lines[seen], nil
			}
		}

		if exited {
			return "", fmt.Errorf("exited (status %d) without printing %q", code, s)
		}

		select {
		case <-more:
		case <-deadline.C:
			return "", fmt.Errorf("no line with %q within %s", s, timeout)
		}
	}
}

// Wait waits for the process to exit by itself and returns its exit
// status (128+N when killed by signal N), failing the test at the deadline.
func (p *Process) Wait(timeout time.Duration) int {
	p.t.Helper()

	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		p.t.Fatalf("%s still runs after %s\noutput:\n%s", p.name, timeout, p.Output())
		return -1
	}
}

// Stop sends SIGTERM and returns the exit status, failing the test if the
// process does not exit within timeout.
func (p *Process) Stop(timeout time.Duration) int {
	p.t.Helper()

	select {
	case <-p.done:
		return p.code
	default:
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("signal %s: %v", p.name, err)
	}

	return p.Wait(timeout)
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago,
// for a process that takes an address rather than a listener. Another
// process may take it meanwhile; tests live with that small race.
func FreePort(t testing.TB) int {
	t.Helper()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	return l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener
}
