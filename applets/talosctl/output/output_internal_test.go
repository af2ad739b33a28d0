package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/api/resource"
)

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
		if got := DisplayType(in); got != want {
			t.Errorf("DisplayType(%q) = %q, want %q", in, got, want)
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
