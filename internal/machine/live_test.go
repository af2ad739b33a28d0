package machine_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/machine"
)

func TestRebootRequired(t *testing.T) {
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
`, []string{"machine.network.hostname", "machine.sysctls.net.ipv4.ip_forward", "machine.sysctls.vm.swappiness", "machine.registries.config.r.example.com.tls.insecureSkipVerify", "cluster.clusterName"}, nil},
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
`, []string{"machine.type", "machine.files", "machine.env.A", "machine.registries.config.r.example.com.auth.username"},
			[]string{"machine.type", "machine.files", "machine.env.A", "machine.registries.config.r.example.com.auth.username"}},
		// Layout, order, quoting and spelled-out empty values are not
		// changes: machine.env and machine.files need a reboot, so
		// reading them as changes would reboot the node for nothing.
		{"same meaning", `
cluster: {clusterName: c}
machine:
    registries: {config: {r.example.com: {tls: {insecureSkipVerify: false}, auth: {username: "u"}}}}
    sysctls: {"net.ipv4.ip_forward": '1'}
    network: {hostname: "a", interfaces: []}
    files: []
    env: {A: "1"}
    type: worker
    token: ""
debug: false
version: v1alpha1
`, nil, nil},
		// A live subtree inside a new section is live.
		{"live inside a new section", strings.Replace(string(old), "cluster:", "  features: {kubePrism: {enabled: true, port: 7445}}\ncluster:", 1),
			[]string{"machine.features.kubePrism.enabled", "machine.features.kubePrism.port"}, nil},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, err := configs.Compare(decode(t, old), decode(t, []byte(tt.new)))
			if err != nil {
				t.Fatal(err)
			}

			var changed []string
			for _, c := range changes {
				changed = append(changed, c.Path.String())
			}

			if !reflect.DeepEqual(changed, tt.changed) {
				t.Errorf("changed = %q\nwant      %q", changed, tt.changed)
			}

			if got := strs(machine.RebootRequired(changes)); !reflect.DeepEqual(got, tt.reboot) {
				t.Errorf("reboot = %q, want %q", got, tt.reboot)
			}
		})
	}
}

func decode(t *testing.T, data []byte) *configs.Config {
	t.Helper()

	cfg, err := configs.Decode(data)
	if err != nil {
		t.Fatal(err)
	}

	return cfg
}

func strs(ps []configs.Path) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}

	return out
}
