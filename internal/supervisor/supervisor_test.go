package supervisor_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/supervisor"
)

func TestStateNames(t *testing.T) {
	for state, want := range map[supervisor.State]string{
		supervisor.Initialized: "Initialized",
		supervisor.Preparing:   "Preparing",
		supervisor.Waiting:     "Waiting",
		supervisor.Running:     "Running",
		supervisor.Stopping:    "Stopping",
		supervisor.Finished:    "Finished",
		supervisor.Failed:      "Failed",
		supervisor.Skipped:     "Skipped",
		supervisor.Starting:    "Starting",
		supervisor.State(42):   "Unknown",
	} {
		if got := state.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(state), got, want)
		}
	}

	// Talos's numbering, which its API clients rely on.
	if supervisor.Initialized != 0 || supervisor.Running != 3 || supervisor.Starting != 8 {
		t.Error("states are not in Talos's order")
	}
}

func TestDependencyWaitingMessages(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t,
		supervisor.Service{
			ID:         "etcd",
			DependsOn:  []string{"cri", "networkd"},
			Conditions: []supervisor.Condition{supervisor.ResourceCondition(h.store, thingPtr("etcd"), nil, "etcd spec")},
			Runner:     blocker(),
		},
		supervisor.Service{ID: "cri", Runner: blocker()},
		supervisor.Service{ID: "networkd", Runner: blocker()},
	)

	h.start(t, "etcd")
	h.rec.waitEvent(t, "etcd", supervisor.Waiting, `Waiting for service "cri" to be "up", service "networkd" to be "up", etcd spec`)

	h.start(t, "cri")
	h.rec.waitEvent(t, "etcd", supervisor.Waiting, `Waiting for service "networkd" to be "up", etcd spec`)

	h.start(t, "networkd")
	h.rec.waitEvent(t, "etcd", supervisor.Waiting, `Waiting for etcd spec`)

	putThing(t, h.store, "etcd", thing{})

	if err := h.sup.WaitUp(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}

	// OnEvent runs after waiters are woken; let the recorder catch up.
	h.rec.waitState(t, "etcd", supervisor.Running)

	equalLines(t, "etcd events", h.rec.lines("etcd"), []string{
		"Starting: Starting service",
		`Waiting: Waiting for service "cri" to be "up", service "networkd" to be "up", etcd spec`,
		`Waiting: Waiting for service "networkd" to be "up", etcd spec`,
		"Waiting: Waiting for etcd spec",
		"Preparing: Running pre state",
		"Preparing: Creating service runner",
		"Running: Service started as goroutine",
	})

	equalLines(t, "cri events", h.rec.lines("cri"), []string{
		"Starting: Starting service",
		"Preparing: Running pre state",
		"Preparing: Creating service runner",
		"Running: Service started as goroutine",
	})
}

func TestStartOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t,
		supervisor.Service{ID: "kubelet", DependsOn: []string{"cri", "timed"}, Runner: blocker()},
		supervisor.Service{ID: "cri", DependsOn: []string{"containerd"}, Runner: blocker()},
		supervisor.Service{ID: "containerd", DependsOn: []string{"udevd"}, Runner: blocker()},
		supervisor.Service{ID: "timed", DependsOn: []string{"containerd"}, Runner: blocker()},
		supervisor.Service{ID: "udevd", Runner: blocker()},
	)

	if err := h.sup.StartAll(); err != nil {
		t.Fatal(err)
	}

	if err := h.sup.WaitUp(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}

	evs := h.rec.wait(t, "all five running", func(evs []recorded) bool {
		n := 0
		for _, e := range evs {
			if e.Event.State == supervisor.Running {
				n++
			}
		}

		return n == 5
	})
	at := map[string]int{}

	for i, e := range evs {
		if e.Event.State == supervisor.Running {
			at[e.ID] = i
		}
	}

	for _, edge := range [][2]string{
		{"udevd", "containerd"}, {"containerd", "cri"}, {"containerd", "timed"}, {"cri", "kubelet"}, {"timed", "kubelet"},
	} {
		if at[edge[0]] >= at[edge[1]] {
			t.Errorf("%s started after %s, which depends on it:\n%s", edge[0], edge[1], dump(evs))
		}
	}
}

func TestSkipped(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t,
		supervisor.Service{ID: "optional"},
		supervisor.Service{ID: "user", DependsOn: []string{"optional"}, Runner: blocker()},
	)

	if err := h.sup.StartAll(); err != nil {
		t.Fatal(err)
	}

	if err := h.sup.WaitUp(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}

	h.rec.waitState(t, "optional", supervisor.Skipped)
	h.rec.waitState(t, "user", supervisor.Running)

	equalLines(t, "skipped service events", h.rec.lines("optional"), []string{
		"Starting: Starting service",
		"Preparing: Running pre state",
		"Preparing: Creating service runner",
		"Skipped: Service skipped",
	})

	if st, _ := h.sup.Status("user"); st.State != supervisor.Running {
		t.Errorf("dependent of a skipped service is %s, want Running", st.State)
	}

	wantConsole := "[talos] service[optional](Starting): Starting service\n" +
		"[talos] service[optional](Preparing): Running pre state\n" +
		"[talos] service[optional](Preparing): Creating service runner\n" +
		"[talos] service[optional](Skipped): Service skipped\n"

	var got strings.Builder

	for l := range strings.Lines(h.console.String()) {
		if strings.Contains(l, "service[optional]") {
			got.WriteString(l)
		}
	}

	if got.String() != wantConsole {
		t.Errorf("console:\n%s\nwant:\n%s", got.String(), wantConsole)
	}
}

func TestLoadAndLookupErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t, supervisor.Service{ID: "a", Runner: blocker()})

	for _, tc := range []struct {
		name string
		svcs []supervisor.Service
		want string
	}{
		{"duplicate in batch", []supervisor.Service{{ID: "x"}, {ID: "x"}}, `service "x" is already loaded`},
		{"already loaded", []supervisor.Service{{ID: "a"}}, `service "a" is already loaded`},
		{"no id", []supervisor.Service{{}}, "service has no ID"},
		{"self dependency", []supervisor.Service{{ID: "s", DependsOn: []string{"s"}}}, `dependency cycle ["s" "s"]`},
		{"cycle", []supervisor.Service{
			{ID: "p", DependsOn: []string{"q"}},
			{ID: "q", DependsOn: []string{"r"}},
			{ID: "r", DependsOn: []string{"p"}},
		}, `dependency cycle ["p" "q" "r" "p"]`},
		{"health check without func", []supervisor.Service{{ID: "h", Health: &supervisor.HealthCheck{}}}, "health check has no Func"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.sup.Load(tc.svcs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error %v, want it to contain %q", err, tc.want)
			}

			if len(h.sup.List()) != 1 {
				t.Fatalf("a failed Load loaded something: %v", h.sup.List())
			}
		})
	}

	ctx := ctxTimeout(t)

	for name, err := range map[string]error{
		"Start":   h.sup.Start("a", "nope"),
		"Stop":    h.sup.Stop(ctx, "nope"),
		"Restart": h.sup.Restart(ctx, "nope"),
		"WaitUp":  h.sup.WaitUp(ctx, "nope"),
	} {
		if !errors.Is(err, supervisor.ErrUnknownService) {
			t.Errorf("%s: %v, want ErrUnknownService", name, err)
		}
	}

	if _, err := h.sup.Logs("nope"); !errors.Is(err, supervisor.ErrUnknownService) {
		t.Errorf("Logs: %v, want ErrUnknownService", err)
	}

	if st, _ := h.sup.Status("a"); st.State != supervisor.Initialized {
		t.Errorf("Start with an unknown ID started %q anyway: %s", "a", st.State)
	}
}

func TestConditionFailure(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t, supervisor.Service{
		ID:         "svc",
		Conditions: []supervisor.Condition{failingCondition{}},
		Runner:     blocker(),
	})
	h.start(t, "svc")

	h.rec.waitEvent(t, "svc", supervisor.Failed, "Condition failed: no disk")

	err := h.sup.WaitUp(ctxTimeout(t), "svc")
	if err == nil || !strings.Contains(err.Error(), `service "svc" failed: Condition failed: no disk`) {
		t.Fatalf("WaitUp: %v", err)
	}
}

type failingCondition struct{}

func (failingCondition) Wait(context.Context) error { return errors.New("no disk") }
func (failingCondition) String() string             { return "disk" }

func TestStopWhileWaiting(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t, supervisor.Service{ID: "svc", DependsOn: []string{"never"}, Runner: blocker()})
	h.start(t, "svc")
	h.rec.waitEvent(t, "svc", supervisor.Waiting, `Waiting for service "never" to be "up"`)
	h.stop(t, "svc")

	equalLines(t, "events", h.rec.lines("svc"), []string{
		"Starting: Starting service",
		`Waiting: Waiting for service "never" to be "up"`,
		"Finished: Service finished successfully",
	})
}

func TestRestartAPI(t *testing.T) {
	h := newHarness(t, nil)

	runs := make(chan struct{}, 10)

	h.load(t, supervisor.Service{ID: "svc", Runner: supervisor.GoroutineRunner(func(ctx context.Context, _ io.Writer) error {
		runs <- struct{}{}
		<-ctx.Done()

		return nil
	})})
	h.start(t, "svc")
	h.start(t, "svc") // already started: nothing happens

	if err := h.sup.WaitUp(ctxTimeout(t), "svc"); err != nil {
		t.Fatal(err)
	}

	if err := h.sup.Restart(ctxTimeout(t), "svc"); err != nil {
		t.Fatal(err)
	}

	// Start records Starting before it returns, so the Finished of the
	// first run cannot pass for up.
	if err := h.sup.WaitUp(ctxTimeout(t), "svc"); err != nil {
		t.Fatal(err)
	}

	for i := range 2 {
		select {
		case <-runs:
		case <-time.After(waitTimeout):
			t.Fatalf("run %d never happened", i+1)
		}
	}

	h.rec.wait(t, "the second run", func(evs []recorded) bool { return len(evs) == 9 })

	equalLines(t, "events", h.rec.lines("svc"), []string{
		"Starting: Starting service",
		"Preparing: Running pre state",
		"Preparing: Creating service runner",
		"Running: Service started as goroutine",
		"Finished: Service finished successfully",
		"Starting: Starting service",
		"Preparing: Running pre state",
		"Preparing: Creating service runner",
		"Running: Service started as goroutine",
	})
}

// plainRunner does not report its own start.
type plainRunner struct{}

func (plainRunner) Run(ctx context.Context, _ io.Writer) error {
	<-ctx.Done()
	return nil
}

func TestRunnerWithoutStartReport(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t, supervisor.Service{ID: "svc", Runner: plainRunner{}})
	h.start(t, "svc")
	h.rec.waitEvent(t, "svc", supervisor.Running, "Service started")
}
