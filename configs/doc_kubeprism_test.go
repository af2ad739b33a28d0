package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubePrismConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into features.kubePrism", doc: "kind: KubePrismConfig\nport: 7446\n", fold: func(t *testing.T, cfg *configs.Config) {
			if kp := cfg.Machine.Features.KubePrism; kp == nil || !*kp.Enabled || kp.Port != 7446 {
				t.Errorf("%+v", kp)
			}
		}},
		// Without it there is no KubePrism.
		{name: "no document", drop: []string{"KubePrismConfig"}, fold: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features != nil && cfg.Machine.Features.KubePrism != nil {
				t.Error("KubePrism without its document")
			}
		}},
		{name: "on a worker", worker: true, doc: "kind: KubePrismConfig\nport: 7445\n"},
		{name: "unknown field", doc: "kind: KubePrismConfig\nport: 7445\nenabled: true\n", decodeErr: `unknown field "enabled" in KubePrismConfig`},
		{name: "wrong type", doc: "kind: KubePrismConfig\nport: high\n", decodeErr: "KubePrismConfig.port:"},
		{name: "bad port", doc: "kind: KubePrismConfig\nport: 0\n", err: "KubePrismConfig.port: invalid port 0: must be in range 1-65535"},
		{name: "a port taken", doc: "kind: KubePrismConfig\nport: 50000\n", err: "KubePrismConfig.port:"},
		{name: "tlsServerName", doc: "kind: KubePrismConfig\nport: 7445\ntlsServerName: api.example.com\n", err: "KubePrismConfig.tlsServerName: talosbox cannot honour tlsServerName"},
		{name: "conflict", v1: "machine:\n  features:\n    kubePrism:\n      enabled: true\n      port: 7445\n",
			err: "KubePrismConfig: KubePrism is already set in the v1alpha1 document (machine.features.kubePrism)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubePrismConfig\nport: 7447\n", check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features.KubePrism.Port != 7447 {
				t.Errorf("%+v", cfg.Machine.Features.KubePrism)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "remove", "path": "/KubePrismConfig"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features.KubePrism != nil {
				t.Error("KubePrism left")
			}
		}},
	})
}
