package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestSecurityProfileConfig(t *testing.T) {
	t.Parallel()

	const (
		doc     = "apiVersion: v1alpha1\nkind: SecurityProfileConfig\n"
		install = "machine:\n  install:\n    disk: /dev/vda\n"
	)

	rtRun(t, []rtCase{
		{name: "isolation off, on metal", mode: configs.ModeMetal, v1: install, docs: doc + "workloadIsolation: false\n"},
		{name: "nothing said, on metal", mode: configs.ModeMetal, v1: install, docs: doc},
		{name: "isolation on, in a container, where Talos ignores it", docs: doc + "workloadIsolation: true\n"},
		{name: "isolation on, on metal", mode: configs.ModeMetal, v1: install, docs: doc + "workloadIsolation: true\n",
			errs: []string{"SecurityProfileConfig.workloadIsolation: talosbox does not implement workload isolation yet"}},
		{name: "isolation on, in a cloud", mode: configs.ModeCloud, v1: install, docs: doc + "workloadIsolation: true\n",
			errs: []string{"SecurityProfileConfig.workloadIsolation: talosbox does not implement workload isolation yet"}},
		{name: "an unknown field", docs: doc + "isolation: true\n", decodeErr: `unknown field "isolation"`},
		{name: "a wrong type", docs: doc + "workloadIsolation: \"true\"\n", decodeErr: `want a boolean (true or false), got the string "true"`},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, doc+"workloadIsolation: true\n")
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", doc + "workloadIsolation: false\n"},
			{"json", `[{"op": "replace", "path": "/SecurityProfileConfig/workloadIsolation", "value": false}]`},
		} {
			cfg := rtPatched(t, doc+"workloadIsolation: true\n", p.patch)
			if d := configs.DocumentOf[*configs.SecurityProfileConfig](cfg); d == nil || d.WorkloadIsolation == nil || *d.WorkloadIsolation {
				t.Errorf("%s: %+v", p.name, d)
			}
		}
	})
}
