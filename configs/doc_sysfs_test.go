package configs_test

import (
	"maps"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestSysfsConfig(t *testing.T) {
	t.Parallel()

	const (
		doc      = "apiVersion: v1alpha1\nkind: SysfsConfig\nparams:\n"
		governor = "devices.system.cpu.cpu0.cpufreq.scaling_governor"
	)

	sysfs := func(want map[string]string) func(*testing.T, *configs.Config) {
		return func(t *testing.T, cfg *configs.Config) {
			if !maps.Equal(cfg.Machine.Sysfs, want) {
				t.Errorf("machine.sysfs = %v, want %v", cfg.Machine.Sysfs, want)
			}
		}
	}

	rtRun(t, []rtCase{
		{name: "folded into machine.sysfs", docs: doc + "  " + governor + ": performance\n", check: sysfs(map[string]string{governor: "performance"})},
		{name: "the document wins over the v1alpha1 document", v1: "machine:\n  sysfs:\n    " + governor + ": powersave\n    kernel.mm.ksm.run: \"1\"\n",
			docs: doc + "  " + governor + ": performance\n", check: sysfs(map[string]string{governor: "performance", "kernel.mm.ksm.run": "1"})},
		{name: "an empty key", docs: doc + "  \"\": x\n", errs: []string{`SysfsConfig.params[""]: sysfs key cannot be empty`}},
		{name: "machine.sysfs's rules, located in the document", docs: doc + "  /sys/kernel/mm/ksm/run: \"1\"\n",
			errs: []string{`SysfsConfig.params["/sys/kernel/mm/ksm/run"]: keys are relative to /sys`}},
		{name: "an unknown field", docs: "apiVersion: v1alpha1\nkind: SysfsConfig\nsettings: {}\n", decodeErr: `unknown field "settings"`},
		{name: "a wrong type", docs: "apiVersion: v1alpha1\nkind: SysfsConfig\nparams: x\n", decodeErr: "SysfsConfig.params: expected a mapping"},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, doc+"  "+governor+": performance\n")
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", "apiVersion: v1alpha1\nkind: SysfsConfig\nparams:\n  " + governor + ": schedutil\n"},
			{"json", `[{"op": "replace", "path": "/SysfsConfig/params/` + governor + `", "value": "schedutil"}]`},
		} {
			cfg := rtPatched(t, doc+"  "+governor+": performance\n", p.patch)
			if got := cfg.Machine.Sysfs[governor]; got != "schedutil" {
				t.Errorf("%s: %s = %q, want schedutil", p.name, governor, got)
			}
		}
	})
}
