package configs_test

import (
	"maps"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestSysctlConfig(t *testing.T) {
	t.Parallel()

	const doc = "apiVersion: v1alpha1\nkind: SysctlConfig\nparams:\n"

	sysctls := func(want map[string]string) func(*testing.T, *configs.Config) {
		return func(t *testing.T, cfg *configs.Config) {
			if !maps.Equal(cfg.Machine.Sysctls, want) {
				t.Errorf("machine.sysctls = %v, want %v", cfg.Machine.Sysctls, want)
			}
		}
	}

	rtRun(t, []rtCase{
		{name: "folded into machine.sysctls", docs: doc + "  net.ipv4.ip_forward: \"1\"\n  net/ipv6/conf/eth0.100/disable_ipv6: \"1\"\n",
			check: sysctls(map[string]string{"net.ipv4.ip_forward": "1", "net/ipv6/conf/eth0.100/disable_ipv6": "1"})},
		{name: "the document wins over the v1alpha1 document, key by key", v1: "machine:\n  sysctls:\n    net.ipv4.ip_forward: \"0\"\n    vm.swappiness: \"10\"\n",
			docs: doc + "  net.ipv4.ip_forward: \"1\"\n", check: sysctls(map[string]string{"net.ipv4.ip_forward": "1", "vm.swappiness": "10"})},
		{name: "empty", docs: "apiVersion: v1alpha1\nkind: SysctlConfig\n", check: sysctls(nil)},
		{name: "an empty key", docs: doc + "  \"\": \"1\"\n", errs: []string{`SysctlConfig.params[""]: sysctl key cannot be empty`}},
		{name: "machine.sysctls's rules, located in the document", docs: doc + "  /proc/sys/net/ipv4/ip_forward: \"1\"\n",
			errs: []string{`SysctlConfig.params["/proc/sys/net/ipv4/ip_forward"]: keys are relative to /proc/sys, written with dots (net.ipv4.ip_forward)`}},
		{name: "an unknown field", docs: "apiVersion: v1alpha1\nkind: SysctlConfig\nparameters: {}\n", decodeErr: `unknown field "parameters"`},
		{name: "a wrong type", docs: "apiVersion: v1alpha1\nkind: SysctlConfig\nparams: [a]\n", decodeErr: "SysctlConfig.params: expected a mapping"},
		{name: "twice", docs: doc + "  a.b: c\n---\n" + doc + "  a.b: d\n", decodeErr: "duplicate document SysctlConfig"},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, doc+"  net.ipv4.ip_forward: \"1\"\n  kernel.domainname: talos.dev\n")
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", "apiVersion: v1alpha1\nkind: SysctlConfig\nparams:\n  vm.swappiness: \"5\"\n"},
			{"json", `[{"op": "add", "path": "/SysctlConfig/params/vm.swappiness", "value": "5"}]`},
		} {
			cfg := rtPatched(t, doc+"  net.ipv4.ip_forward: \"1\"\n", p.patch)
			if want := map[string]string{"net.ipv4.ip_forward": "1", "vm.swappiness": "5"}; !maps.Equal(cfg.Machine.Sysctls, want) {
				t.Errorf("%s: machine.sysctls = %v, want %v", p.name, cfg.Machine.Sysctls, want)
			}
		}
	})
}
