package machine_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/internal/machine"
)

func TestChangedPathsAndRebootRequired(t *testing.T) {
	old := []byte(`
version: v1alpha1
machine:
  type: worker
  env: {A: "1"}
  network: {hostname: a}
  sysctls: {net.ipv4.ip_forward: "1"}
  registries:
    config:
      r.example.com: {auth: {username: u}, tls: {insecureSkipVerify: false}}
cluster:
  clusterName: c
`)

	tests := []struct {
		name    string
		new     string
		changed []string
		reboot  []string
	}{
		{"identical", string(old), nil, nil},
		{"live only", `
version: v1alpha1
machine:
  type: worker
  env: {A: "1"}
  network: {hostname: b}
  sysctls: {net.ipv4.ip_forward: "0", vm.swappiness: "1"}
  registries:
    config:
      r.example.com: {auth: {username: u}, tls: {insecureSkipVerify: true}}
cluster:
  clusterName: d
`, []string{"cluster.clusterName", "machine.network.hostname", "machine.registries.config.r.example.com.tls.insecureSkipVerify", "machine.sysctls.net.ipv4.ip_forward", "machine.sysctls.vm.swappiness"}, nil},
		{"needs reboot", `
version: v1alpha1
machine:
  type: controlplane
  env: {A: "2"}
  network: {hostname: a}
  sysctls: {net.ipv4.ip_forward: "1"}
  files: [{path: /var/f, content: x, op: create}]
  registries:
    config:
      r.example.com: {auth: {username: v}, tls: {insecureSkipVerify: false}}
cluster:
  clusterName: c
`, []string{"machine.env.A", "machine.files", "machine.registries.config.r.example.com.auth.username", "machine.type"},
			[]string{"machine.env.A", "machine.files", "machine.registries.config.r.example.com.auth.username", "machine.type"}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed, err := machine.ChangedPaths(old, []byte(tt.new))
			if err != nil {
				t.Fatal(err)
			}

			if !reflect.DeepEqual(strs(changed), tt.changed) {
				t.Errorf("changed = %q\nwant      %q", changed, tt.changed)
			}

			if got := strs(machine.RebootRequired(changed)); !reflect.DeepEqual(got, tt.reboot) {
				t.Errorf("reboot = %q, want %q", got, tt.reboot)
			}
		})
	}
}

func strs(ps []machine.FieldPath) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}

	return out
}
