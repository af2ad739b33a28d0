package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeSchedulerConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into cluster.scheduler", doc: "kind: KubeSchedulerConfig\nimage: registry.k8s.io/kube-scheduler:v1.34.12\nconfig:\n  profiles:\n    - schedulerName: default-scheduler\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				s := cfg.Cluster.Scheduler
				if s.Image != "registry.k8s.io/kube-scheduler:v1.34.12" || len(s.Config["profiles"].([]any)) != 1 {
					t.Errorf("scheduler %+v", s)
				}
			}},
		{name: "disabled", doc: "kind: KubeSchedulerConfig\nenabled: false\nconfig: {}\n", fold: func(t *testing.T, cfg *configs.Config) {
			if s := cfg.Machine.ControlPlane.Scheduler; s == nil || !s.Disabled {
				t.Error("not disabled")
			}
		}},
		{name: "unknown field", doc: "kind: KubeSchedulerConfig\nimage: x\nconfig: {}\nprofiles: []\n", decodeErr: `unknown field "profiles" in KubeSchedulerConfig`},
		{name: "wrong type", doc: "kind: KubeSchedulerConfig\nimage: x\nconfig: x\n", decodeErr: "KubeSchedulerConfig.config: expected a mapping"},
		{name: "no image", doc: "kind: KubeSchedulerConfig\nconfig: {}\n", err: "KubeSchedulerConfig.image: kube-scheduler image cannot be empty"},
		// The configuration is checked against the scheduler's schema.
		{name: "unknown configuration field", doc: "kind: KubeSchedulerConfig\nimage: registry.k8s.io/kube-scheduler:v1.34.12\nconfig:\n  profile: []\n",
			err: "KubeSchedulerConfig.config.profile:"},
		{name: "only on control planes", worker: true, doc: "kind: KubeSchedulerConfig\nenabled: false\nconfig: {}\n",
			err: "document kind KubeSchedulerConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "cluster:\n  scheduler:\n    image: registry.k8s.io/kube-scheduler:v1.34.12\n",
			err: "KubeSchedulerConfig: the kube-scheduler config is already set in the v1alpha1 document (cluster.scheduler)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeSchedulerConfig\nenabled: false\n", check: func(t *testing.T, cfg *configs.Config) {
			if !cfg.Machine.ControlPlane.Scheduler.Disabled {
				t.Error("not disabled")
			}
		}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeSchedulerConfig/extraArgs", "value": {"v": "2"}}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.Scheduler.ExtraArgs["v"].String() != "2" {
				t.Errorf("%+v", cfg.Cluster.Scheduler)
			}
		}},
	})
}
