package talos

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/talosbox/talosbox/internal/api/machine"
)

// TestServiceStatusLayout renders the troubleshooting guide's
// `talosctl -n <IP> service etcd` example byte for byte.
func TestServiceStatusLayout(t *testing.T) {
	now := time.Date(2021, 3, 5, 21, 0, 0, 0, time.UTC)
	at := func(ago string) *timestamppb.Timestamp {
		d, err := time.ParseDuration(ago)
		if err != nil {
			t.Fatal(err)
		}

		return timestamppb.New(now.Add(-d))
	}

	svc := &machine.ServiceInfo{
		Id: "etcd", State: "Running", Health: &machine.ServiceHealth{Healthy: true},
		Events: &machine.ServiceEvents{Events: []*machine.ServiceEvent{ // oldest first, as the node keeps them
			{State: "Waiting", Msg: `Waiting for service "cri" to be "up", service "networkd" to be "up", service "timed" to be "up"`, Ts: at("3m26s")},
			{State: "Preparing", Msg: "Running pre state", Ts: at("3m26s")},
			{State: "Preparing", Msg: "Creating service runner", Ts: at("3m26s")},
			{State: "Running", Msg: "Started task etcd (PID 2343) for container etcd", Ts: at("3m26s")},
			{State: "Running", Msg: "Health check successful", Ts: at("3m21s")},
		}},
	}

	var buf bytes.Buffer
	if err := writeServiceStatus(&buf, []nodeService{{node: "172.20.0.2", svc: svc}}, now); err != nil {
		t.Fatal(err)
	}

	want := `NODE     172.20.0.2
ID       etcd
STATE    Running
HEALTH   OK
EVENTS   [Running]: Health check successful (3m21s ago)
         [Running]: Started task etcd (PID 2343) for container etcd (3m26s ago)
         [Preparing]: Creating service runner (3m26s ago)
         [Preparing]: Running pre state (3m26s ago)
         [Waiting]: Waiting for service "cri" to be "up", service "networkd" to be "up", service "timed" to be "up" (3m26s ago)
`
	if got := buf.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestServiceListLayout(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(msg string, ago time.Duration) *machine.ServiceEvents {
		return &machine.ServiceEvents{Events: []*machine.ServiceEvent{{Msg: msg, State: "Running", Ts: timestamppb.New(now.Add(-ago))}}}
	}

	lists := []nodeServices{
		{node: "10.5.0.2", services: []*machine.ServiceInfo{
			{Id: "apid", State: "Running", Health: &machine.ServiceHealth{Healthy: true}, Events: ev("Health check successful", 65*time.Second)},
			{Id: "timed", State: "Skipped", Health: &machine.ServiceHealth{Unknown: true}, Events: ev("Service skipped", 2*time.Minute)},
		}},
		{node: "10.5.0.3", services: []*machine.ServiceInfo{
			{Id: "containerd", State: "Running", Health: &machine.ServiceHealth{LastMessage: "dial unix: no such file"}},
		}},
	}

	var buf bytes.Buffer
	if err := writeServiceList(&buf, lists, now); err != nil {
		t.Fatal(err)
	}

	want := `NODE       SERVICE      STATE     HEALTH   LAST CHANGE   LAST EVENT
10.5.0.2   apid         Running   OK       1m5s ago      Health check successful
10.5.0.2   timed        Skipped   ?        2m0s ago      Service skipped
10.5.0.3   containerd   Running   Fail                   
`
	if got := buf.String(); got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
}

func TestStripHeader(t *testing.T) {
	in := editHeader("10.0.0.2") + errorHeader(errorString("bad\nworse")) + "version: v1alpha1\n# kept\nmachine: {}\n"
	if got := string(stripHeader([]byte(in))); got != "version: v1alpha1\n# kept\nmachine: {}\n" {
		t.Fatalf("got %q", got)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
