package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeControllerManagerConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into cluster.controllerManager", doc: "kind: KubeControllerManagerConfig\nimage: registry.k8s.io/kube-controller-manager:v1.34.12\nextraArgs:\n  v: \"2\"\nenv:\n  A: b\nresources:\n  limits:\n    memory: 2Gi\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				cm := cfg.Cluster.ControllerManager
				if cm.Image != "registry.k8s.io/kube-controller-manager:v1.34.12" || cm.ExtraArgs["v"].String() != "2" || cm.Env["A"] != "b" || cm.Resources.Limits["memory"] != "2Gi" {
					t.Errorf("controllerManager %+v", cm)
				}
			}},
		{name: "disabled", doc: "kind: KubeControllerManagerConfig\nenabled: false\n", fold: func(t *testing.T, cfg *configs.Config) {
			if t2 := cfg.Machine.ControlPlane.ControllerManager; t2 == nil || !t2.Disabled {
				t.Error("not disabled")
			}
		}},
		{name: "unknown field", doc: "kind: KubeControllerManagerConfig\nimage: x\nextraVolumes: []\n", decodeErr: `unknown field "extraVolumes" in KubeControllerManagerConfig`},
		{name: "wrong type", doc: "kind: KubeControllerManagerConfig\nenabled: sometimes\n", decodeErr: "KubeControllerManagerConfig.enabled:"},
		{name: "no image", doc: "kind: KubeControllerManagerConfig\n", err: "KubeControllerManagerConfig.image: kube-controller-manager image cannot be empty"},
		{name: "denied flag", doc: "kind: KubeControllerManagerConfig\nimage: registry.k8s.io/kube-controller-manager:v1.34.12\nextraArgs:\n  root-ca-file: /x\n",
			err: `KubeControllerManagerConfig.extraArgs["root-ca-file"]:`},
		{name: "only on control planes", worker: true, doc: "kind: KubeControllerManagerConfig\nenabled: false\n",
			err: "document kind KubeControllerManagerConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "cluster:\n  controllerManager:\n    image: registry.k8s.io/kube-controller-manager:v1.34.12\n",
			err: "KubeControllerManagerConfig: the kube-controller-manager config is already set in the v1alpha1 document (cluster.controllerManager)"},
		{name: "conflict with disabled", v1: "machine:\n  controlPlane:\n    controllerManager:\n      disabled: true\n",
			err: "KubeControllerManagerConfig.enabled: the kube-controller-manager config is already set in the v1alpha1 document (machine.controlPlane.controllerManager)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeControllerManagerConfig\nextraArgs:\n  v: \"3\"\n", check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.ControllerManager.ExtraArgs["v"].String() != "3" {
				t.Errorf("%+v", cfg.Cluster.ControllerManager)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeControllerManagerConfig/image", "value": "registry.k8s.io/kube-controller-manager:v1.34.1"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.ControllerManager.Image != "registry.k8s.io/kube-controller-manager:v1.34.1" {
				t.Errorf("%+v", cfg.Cluster.ControllerManager)
			}
		}},
	})
}
