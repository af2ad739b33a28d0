package supervisor_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/supervisor"
)

// finishOrder lists services in the order they reached Finished.
func finishOrder(evs []recorded) []string {
	var out []string

	for _, e := range evs {
		if e.Event.State == supervisor.Finished {
			out = append(out, e.ID)
		}
	}

	return out
}

func TestStopAllReverseDependencyOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.load(t,
		supervisor.Service{ID: "containerd", Runner: blocker()},
		supervisor.Service{ID: "cri", DependsOn: []string{"containerd"}, Runner: blocker()},
		supervisor.Service{ID: "etcd", DependsOn: []string{"cri"}, Runner: blocker()},
		supervisor.Service{ID: "kubelet", DependsOn: []string{"cri", "etcd"}, Runner: blocker()},
		supervisor.Service{ID: "apid", DependsOn: []string{"containerd"}, Runner: blocker()},
		supervisor.Service{ID: "never-started", DependsOn: []string{"containerd"}, Runner: blocker()},
	)
	h.start(t, "containerd", "cri", "etcd", "kubelet", "apid")

	if err := h.sup.WaitUp(ctxTimeout(t), "containerd", "cri", "etcd", "kubelet", "apid"); err != nil {
		t.Fatal(err)
	}

	if err := h.sup.StopAll(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}

	order := finishOrder(h.rec.wait(t, "five services finished", func(evs []recorded) bool {
		return len(finishOrder(evs)) == 5
	}))

	for _, edge := range [][2]string{
		{"kubelet", "etcd"}, {"etcd", "cri"}, {"kubelet", "cri"}, {"cri", "containerd"}, {"apid", "containerd"},
	} {
		if slices.Index(order, edge[0]) > slices.Index(order, edge[1]) {
			t.Errorf("%s stopped after %s, which it depends on; order %q", edge[0], edge[1], order)
		}
	}

	if st, _ := h.sup.Status("never-started"); st.State != supervisor.Initialized {
		t.Errorf("never-started is %s", st.State)
	}

	// The chain kubelet -> etcd -> cri -> containerd fixes the order fully
	// except for apid.
	chain := slices.DeleteFunc(slices.Clone(order), func(id string) bool { return id == "apid" })
	equalLines(t, "stop order", chain, []string{"kubelet", "etcd", "cri", "containerd"})

	wantConsole := []string{
		"[talos] service[kubelet](Finished): Service finished successfully",
		"[talos] service[etcd](Finished): Service finished successfully",
		"[talos] service[cri](Finished): Service finished successfully",
		"[talos] service[containerd](Finished): Service finished successfully",
	}

	var console []string

	for l := range strings.Lines(h.console.String()) {
		if strings.Contains(l, "(Finished)") && !strings.Contains(l, "[apid]") {
			console = append(console, strings.TrimSuffix(l, "\n"))
		}
	}

	equalLines(t, "console", console, wantConsole)
}

func TestStopAllTimeout(t *testing.T) {
	h := newHarness(t, func(o *supervisor.Options) { o.StopTimeout = 50 * time.Millisecond })

	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the harness's StopAll

	h.load(t,
		supervisor.Service{ID: "base", Runner: blocker()},
		supervisor.Service{ID: "stuck", DependsOn: []string{"base"}, Runner: supervisor.GoroutineRunner(func(context.Context, io.Writer) error {
			<-release // ignores its context
			return nil
		})},
	)
	h.start(t, "base", "stuck")

	if err := h.sup.WaitUp(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	err := h.sup.StopAll(ctxTimeout(t))

	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `stopping service "stuck"`) {
		t.Fatalf("StopAll: %v", err)
	}

	if elapsed := time.Since(started); elapsed > 10*time.Second {
		t.Fatalf("StopAll took %s", elapsed)
	}

	// The stuck service did not hold its dependency up forever.
	if st, _ := h.sup.Status("base"); st.State != supervisor.Finished {
		t.Fatalf("base is %s after StopAll", st.State)
	}

	if st, _ := h.sup.Status("stuck"); st.State != supervisor.Running {
		t.Fatalf("stuck is %s", st.State)
	}
}
