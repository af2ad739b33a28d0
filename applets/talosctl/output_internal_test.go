package talosctl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
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

func TestDisplayType(t *testing.T) {
	for in, want := range map[string]string{
		"Manifests.kubernetes.talos.dev":             "Manifest",
		"StaticPodStatuses.kubernetes.talos.dev":     "StaticPodStatus",
		"BootstrapStatuses.v1alpha1.talos.dev":       "BootstrapStatus",
		"MachineConfigs.config.talos.dev":            "MachineConfig",
		"Addresses.net.talos.dev":                    "Address",
		"Services.v1alpha1.talos.dev":                "Service",
		"ResourceDefinitions.meta.talos.dev":         "ResourceDefinition",
		"NetworkPolicies.net.talos.dev":              "NetworkPolicy",
		"KubernetesControlPlaneConfigs.config.talos": "KubernetesControlPlaneConfig",
		"Leases.x": "Lease",
	} {
		if got := displayType(in); got != want {
			t.Errorf("displayType(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONPath(t *testing.T) {
	data := map[string]any{
		"spec": map[string]any{
			"stage":  "running",
			"status": map[string]any{"ready": true, "n": 3},
			"addrs":  []any{"10.0.0.2/24", "fd00::2/64"},
			"data":   map[string]any{"service-account.key": "LS0t"},
			"list":   []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
		},
	}

	tests := []struct{ expr, want, err string }{
		{"{.spec.stage}", "running", ""},
		{"{.spec.status.ready}", "true", ""},
		{"{.spec.status.n}", "3", ""},
		{"{.spec.addrs[0]}", "10.0.0.2/24", ""},
		{"{.spec.addrs[-1]}", "fd00::2/64", ""},
		{"{.spec.addrs[*]}", "10.0.0.2/24 fd00::2/64", ""},
		{"{.spec.list[*].name}", "a b", ""},
		{`{.spec.list[?(@.name=="b")].name}`, "b", ""},
		{`{.spec.list[?(@.name=="z")].name}`, "", ""},
		{`{.spec.list[?(@.name~"b")]}`, "", "unsupported filter"},
		{`{.spec.data.service-account\.key}`, "LS0t", ""},
		{"{.spec.data['service-account.key']}", "LS0t", ""},
		{"{.spec.missing}", "", ""},
		{`stage={.spec.stage}{"\n"}`, "stage=running\n", ""},
		{"{.spec.status}", `{"n":3,"ready":true}`, ""},
		{"{.spec.stage", "", "unclosed {"},
		{"{.spec[x]}", "", "unsupported subscript"},
	}

	for _, tt := range tests {
		p, err := parseJSONPath(tt.expr)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.expr, err, tt.err)
			}

			continue
		}

		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}

		got, err := p.Execute(data)
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}

func TestMachineConfigText(t *testing.T) {
	raw := "version: v1alpha1\n# a comment\nmachine:\n    type: worker\n"

	for name, spec := range map[string]string{
		"raw":            raw,
		"wrapped text":   "config: |\n    version: v1alpha1\n    # a comment\n    machine:\n        type: worker\n",
		"wrapped object": "config:\n    version: v1alpha1\n    # a comment\n    machine:\n        type: worker\n",
	} {
		got, err := client.ConfigText([]byte(spec))
		if err != nil || string(got) != raw {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, raw)
		}
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

// A listing that joins types (get kcpc) prints each row's own type.
func TestTableRowsSayTheirType(t *testing.T) {
	var buf bytes.Buffer

	tw := &tableWriter{w: &buf}
	if err := tw.Header(&resource.ResourceDefinition{Type: "APIServerConfigs.kubernetes.talos.dev"}, false); err != nil {
		t.Fatal(err)
	}

	for _, typ := range []string{"APIServerConfigs.kubernetes.talos.dev", "SchedulerConfigs.kubernetes.talos.dev"} {
		r := &resource.Resource{Metadata: &resource.ResourceMetadata{Namespace: "controlplane", Type: typ, Id: "x", Version: 1}}
		if err := tw.Resource("10.5.0.2", r, 0); err != nil {
			t.Fatal(err)
		}
	}

	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "APIServerConfig ") || !strings.Contains(lines[2], "SchedulerConfig ") {
		t.Errorf("table:\n%s", buf.String())
	}
}
