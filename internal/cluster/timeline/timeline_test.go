package timeline_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/cluster/timeline"
)

func TestServiceSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ev := func(sec int, state, msg string) *machine.ServiceEvent {
		return &machine.ServiceEvent{State: state, Msg: msg, Ts: timestamppb.New(t0.Add(time.Duration(sec) * time.Second))}
	}

	list := &machine.ServiceList{Services: []*machine.ServiceInfo{
		{Id: "etcd", Events: &machine.ServiceEvents{Events: []*machine.ServiceEvent{
			ev(0, "Preparing", "Running pre state"),
			ev(1, "Waiting", "Waiting for bootstrap"),
			ev(5, "Running", "Started task etcd (PID 42) for container etcd"),
			ev(6, "Running", "Health check failed: connection refused"),
			ev(8, "Running", "Health check successful"),
			// A restart later is not the bring-up.
			ev(30, "Running", "Started task etcd (PID 99) for container etcd"),
			ev(31, "Running", "Health check successful"),
		}}},
		// Healthy in the same event that says it runs.
		{Id: "apid", Events: &machine.ServiceEvents{Events: []*machine.ServiceEvent{ev(2, "Running", "Health check successful")}}},
		// Never ran: no step.
		{Id: "kubelet", Events: &machine.ServiceEvents{Events: []*machine.ServiceEvent{ev(3, "Waiting", "Waiting for etcd")}}},
	}}

	var got []string
	for _, e := range timeline.ServiceSteps("10.5.0.2", list) {
		got = append(got, e.At.Sub(t0).String()+" "+e.Node+" "+e.What)
	}

	want := []string{"5s 10.5.0.2 etcd running", "8s 10.5.0.2 etcd healthy", "2s 10.5.0.2 apid running", "2s 10.5.0.2 apid healthy"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("steps\n got %q\nwant %q", got, want)
	}
}

func TestWrite(t *testing.T) {
	tl := timeline.New()
	t0 := tl.Start()

	tl.Name("10.5.0.2", "demo-controlplane-1")
	// Added out of order, as the nodes' and the API server's steps are.
	tl.Add(
		timeline.Entry{At: t0.Add(9 * time.Second), Node: "demo-controlplane-1", What: "node Ready"},
		timeline.Entry{At: t0.Add(2500 * time.Millisecond), Node: "10.5.0.2", What: "etcd running"},
		timeline.Entry{At: t0.Add(time.Second), Node: timeline.Client, What: "stage containers done"},
		// A node clock a little behind the client's.
		timeline.Entry{At: t0.Add(-200 * time.Millisecond), Node: "10.5.0.2", What: "machined running"},
	)

	var b strings.Builder
	if err := tl.Write(&b); err != nil {
		t.Fatal(err)
	}

	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("lines:\n%s", b.String())
	}

	for i, want := range [][]string{
		{"T+", "(s)", "STEP", "(s)", "NODE", "WHAT"},
		{"-0.2", "+0.0", "demo-controlplane-1", "machined running"},
		{"1.0", "+1.0", "talosctl", "stage containers done"},
		{"2.5", "+1.5", "demo-controlplane-1", "etcd running"},
		{"9.0", "+6.5", "demo-controlplane-1", "node Ready"},
	} {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(strings.Fields(strings.Join(want, " ")), " ") {
			t.Errorf("line %d: %q, want %q", i, lines[i], want)
		}
	}

	if d := tl.Since("demo-controlplane-1", "node Ready"); d != 9*time.Second {
		t.Errorf("Since node Ready: %v", d)
	}

	if d := tl.Since("", "no such step"); d != -1 {
		t.Errorf("Since a missing step: %v", d)
	}
}
