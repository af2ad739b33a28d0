package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeTalosAPIAccessConfig(t *testing.T) {
	const doc = "kind: KubeTalosAPIAccessConfig\nallowedRoles: [os:reader]\nallowedKubernetesNamespaces: [kube-system]\n"

	runKubeCases(t, []kubeCase{
		{name: "folds into features.kubernetesTalosAPIAccess", doc: doc, fold: func(t *testing.T, cfg *configs.Config) {
			a := cfg.Machine.Features.KubernetesTalosAPIAccess
			if a == nil || !*a.Enabled || a.AllowedRoles[0] != "os:reader" || a.AllowedKubernetesNamespaces[0] != "kube-system" {
				t.Errorf("%+v", a)
			}
		}},
		{name: "unknown field", doc: "kind: KubeTalosAPIAccessConfig\nroles: []\n", decodeErr: `unknown field "roles" in KubeTalosAPIAccessConfig`},
		{name: "wrong type", doc: "kind: KubeTalosAPIAccessConfig\nallowedRoles: os:reader\n", decodeErr: "KubeTalosAPIAccessConfig.allowedRoles: expected a sequence"},
		{name: "bad role", doc: "kind: KubeTalosAPIAccessConfig\nallowedRoles: [os:root]\n", err: `KubeTalosAPIAccessConfig.allowedRoles[0]: invalid role "os:root"`},
		{name: "bad namespace", doc: "kind: KubeTalosAPIAccessConfig\nallowedKubernetesNamespaces: [Kube_System]\n", err: `KubeTalosAPIAccessConfig.allowedKubernetesNamespaces[0]: invalid namespace "Kube_System"`},
		{name: "only on control planes", worker: true, doc: doc, err: "document kind KubeTalosAPIAccessConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "machine:\n  features:\n    kubernetesTalosAPIAccess:\n      enabled: false\n", doc: doc,
			err: "KubeTalosAPIAccessConfig: Talos API access from Kubernetes is already set in the v1alpha1 document (machine.features.kubernetesTalosAPIAccess)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge adds it", patch: "apiVersion: v1alpha1\n" + doc, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features.KubernetesTalosAPIAccess == nil {
				t.Error("not added")
			}
		}},
		{name: "JSON patch adds it", patch: `[{"op": "add", "path": "/KubeTalosAPIAccessConfig", "value": {"allowedRoles": ["os:reader"]}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if a := cfg.Machine.Features.KubernetesTalosAPIAccess; a == nil || a.AllowedRoles[0] != "os:reader" {
					t.Errorf("%+v", a)
				}
			}},
	})
}
