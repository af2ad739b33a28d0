package configs_test

import (
	"maps"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestEnvironmentConfig(t *testing.T) {
	t.Parallel()

	const doc = "apiVersion: v1alpha1\nkind: EnvironmentConfig\nvariables:\n"

	env := func(want map[string]string) func(*testing.T, *configs.Config) {
		return func(t *testing.T, cfg *configs.Config) {
			if !maps.Equal(cfg.Machine.Env, want) {
				t.Errorf("machine.env = %v, want %v", cfg.Machine.Env, want)
			}
		}
	}

	rtRun(t, []rtCase{
		{name: "folded into machine.env", docs: doc + "  https_proxy: http://proxy:3128/\n  GRPC_GO_LOG_SEVERITY_LEVEL: info\n",
			check: env(map[string]string{"https_proxy": "http://proxy:3128/", "GRPC_GO_LOG_SEVERITY_LEVEL": "info"})},
		{name: "the document wins over the v1alpha1 document", v1: "machine:\n  env:\n    https_proxy: http://old:3128/\n    no_proxy: .local\n",
			docs: doc + "  https_proxy: http://proxy:3128/\n", check: env(map[string]string{"https_proxy": "http://proxy:3128/", "no_proxy": ".local"})},
		{name: "not a POSIX name", docs: doc + "  1BAD: x\n  also-bad: y\n",
			errs: []string{`EnvironmentConfig.variables["1BAD"]: invalid environment variable name "1BAD"`, `EnvironmentConfig.variables["also-bad"]: invalid environment variable name "also-bad"`}},
		{name: "an unknown field", docs: "apiVersion: v1alpha1\nkind: EnvironmentConfig\nenv: {}\n", decodeErr: `unknown field "env"`},
		{name: "a wrong type", docs: doc + "  A: [x]\n", decodeErr: `EnvironmentConfig.variables["A"]: expected a single value, got a sequence`},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, doc+"  https_proxy: http://proxy:3128/\n  EMPTY: \"\"\n")
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", doc + "  no_proxy: .local\n"},
			{"json", `[{"op": "add", "path": "/EnvironmentConfig/variables/no_proxy", "value": ".local"}]`},
		} {
			cfg := rtPatched(t, doc+"  https_proxy: http://proxy:3128/\n", p.patch)
			if want := map[string]string{"https_proxy": "http://proxy:3128/", "no_proxy": ".local"}; !maps.Equal(cfg.Machine.Env, want) {
				t.Errorf("%s: machine.env = %v, want %v", p.name, cfg.Machine.Env, want)
			}
		}
	})
}
