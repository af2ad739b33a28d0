package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeStaticPodConfig(t *testing.T) {
	const pod = "kind: KubeStaticPodConfig\nname: nginx\npod:\n  apiVersion: v1\n  kind: Pod\n  metadata:\n    name: nginx\n  spec:\n    containers:\n      - name: nginx\n        image: nginx\n"

	runKubeCases(t, []kubeCase{
		{name: "folds into machine.pods", doc: pod, fold: func(t *testing.T, cfg *configs.Config) {
			if p := cfg.Machine.Pods; len(p) != 1 || p[0]["kind"] != "Pod" {
				t.Errorf("pods %+v", p)
			}
		}},
		{name: "on a worker", worker: true, doc: pod},
		{name: "unknown field", doc: "kind: KubeStaticPodConfig\nname: a\nspec: {}\n", decodeErr: `unknown field "spec" in KubeStaticPodConfig["a"]`},
		{name: "wrong type", doc: "kind: KubeStaticPodConfig\nname: a\npod: []\n", decodeErr: `KubeStaticPodConfig["a"].pod: expected a mapping`},
		{name: "no pod", doc: "kind: KubeStaticPodConfig\nname: a\n", err: `KubeStaticPodConfig["a"].pod: static pod spec is required`},
		{name: "bad name", doc: "kind: KubeStaticPodConfig\nname: Nginx\npod:\n  kind: Pod\n", err: `KubeStaticPodConfig["Nginx"].name: static pod name "Nginx" is invalid`},
		// The pod is checked as machine.pods are.
		{name: "not a pod", doc: "kind: KubeStaticPodConfig\nname: a\npod:\n  apiVersion: v1\n  kind: Service\n  metadata:\n    name: a\n", err: `KubeStaticPodConfig["a"].pod`},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge replaces the pod", patch: "apiVersion: v1alpha1\n" + pod, check: func(t *testing.T, cfg *configs.Config) {
			if len(cfg.Machine.Pods) != 1 {
				t.Errorf("%+v", cfg.Machine.Pods)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeStaticPodConfig", "value": {"web": {"pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if len(cfg.Machine.Pods) != 1 {
					t.Errorf("%+v", cfg.Machine.Pods)
				}
			}},
	})
}
