package taskrunner

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/supervisor"
)

// events records a supervisor's events for the tests to wait on.
type events struct {
	mu      sync.Mutex
	lines   []string // "<id> <State>: <message>"
	changed chan struct{}
}

func (ev *events) add(id string, e supervisor.Event) {
	ev.mu.Lock()
	defer ev.mu.Unlock()

	ev.lines = append(ev.lines, fmt.Sprintf("%s %s: %s", id, e.State, e.Message))
	close(ev.changed)
	ev.changed = make(chan struct{})
}

// wait returns the first event matching re.
func (ev *events) wait(t *testing.T, re *regexp.Regexp) string {
	t.Helper()

	deadline := time.After(waitTimeout)

	for {
		ev.mu.Lock()
		i := slices.IndexFunc(ev.lines, re.MatchString)
		lines, changed := slices.Clone(ev.lines), ev.changed
		ev.mu.Unlock()

		if i >= 0 {
			return lines[i]
		}

		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no event matching %s; events:\n%s", re, strings.Join(lines, "\n"))
		}
	}
}

// TestUnderSupervisor runs tasks as services: the supervisor shows the
// task's PID once it started, the stop steps, and names the runner in
// restart messages.
func TestUnderSupervisor(t *testing.T) {
	t.Parallel()

	e := setup(t)
	ev := &events{changed: make(chan struct{})}
	sup := supervisor.New(supervisor.Options{OnEvent: ev.add})

	waiting, failing := e.options("-wait"), e.options("-exit", "1")

	if got, want := fmt.Sprint(New(waiting)), fmt.Sprintf("Containerd(%q)", waiting.ID); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}

	err := sup.Load(
		supervisor.Service{ID: "waiting", Runner: New(waiting), Restart: supervisor.Once},
		// Restarted long after the test is over: it only fails once.
		supervisor.Service{ID: "failing", Runner: New(failing), RestartInterval: time.Hour},
	)
	if err != nil {
		t.Fatal(err)
	}

	if err := sup.Start("waiting", "failing"); err != nil {
		t.Fatal(err)
	}

	id := regexp.QuoteMeta(waiting.ID)
	ev.wait(t, regexp.MustCompile(`^waiting Running: Started task `+id+` \(PID \d+\) for container `+id+`$`))

	logs, err := sup.Logs("waiting")
	if err != nil {
		t.Fatal(err)
	}

	if err := sup.Stop(t.Context(), "waiting"); err != nil {
		t.Fatal(err)
	}

	ev.wait(t, regexp.MustCompile(`^waiting Stopping: Sending SIGTERM to task `+id+` \(PID \d+, container `+id+`\)$`))
	ev.wait(t, regexp.MustCompile(`^waiting Finished: `))

	if log := string(logs.Bytes()); !hasLine(log, "ready") || !hasLine(log, "got SIGTERM") {
		t.Errorf("service log:\n%s", log)
	}

	msg := fmt.Sprintf("failing Waiting: Error running Containerd(%q), going to restart forever: task %s exited with status 1", failing.ID, failing.ID)
	ev.wait(t, regexp.MustCompile(`^`+regexp.QuoteMeta(msg)+`$`))

	if err := sup.Stop(t.Context(), "failing"); err != nil {
		t.Fatal(err)
	}
}
