package configs_test

import (
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeletConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		// config: {} is the kubelet configuration the node writes,
		// unchanged; no manifests directory, as Talos 1.14 has it.
		{name: "config {}", doc: "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.34.12\nconfig: {}\n", fold: func(t *testing.T, cfg *configs.Config) {
			k := cfg.Machine.Kubelet
			if k.Image != "ghcr.io/siderolabs/kubelet:v1.34.12" || len(k.ExtraConfig) != 0 || !k.DisableManifestsDirectory || k.DefaultRuntimeSeccompProfileEnabled {
				t.Errorf("kubelet %+v", k)
			}
		}},
		{name: "folds into machine.kubelet", doc: `kind: KubeletConfig
image: ghcr.io/siderolabs/kubelet:v1.34.12
config:
  serverTLSBootstrap: true
extraArgs:
  feature-gates: AllBeta=true
clusterDNS: [10.96.0.11]
defaultRuntimeSeccompProfileEnabled: true
`, fold: func(t *testing.T, cfg *configs.Config) {
			k := cfg.Machine.Kubelet
			if k.ExtraConfig["serverTLSBootstrap"] != true || k.ExtraArgs["feature-gates"].String() != "AllBeta=true" ||
				!slices.Equal(k.ClusterDNS, []string{"10.96.0.11"}) || !k.DefaultRuntimeSeccompProfileEnabled {
				t.Errorf("kubelet %+v", k)
			}
		}},
		{name: "on a worker", worker: true, doc: "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.34.12\nconfig: {}\n"},
		{name: "unknown field", doc: "kind: KubeletConfig\nimage: x\nconfig: {}\nextraConfig: {}\n", decodeErr: `unknown field "extraConfig" in KubeletConfig`},
		{name: "wrong type", doc: "kind: KubeletConfig\nimage: x\nconfig: [a]\n", decodeErr: "KubeletConfig.config: expected a mapping, got a sequence"},
		{name: "no image", doc: "kind: KubeletConfig\nconfig: {}\n", err: "KubeletConfig.image: kubelet image cannot be empty"},
		{name: "bad image", doc: "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.20.5\nconfig: {}\n",
			err: "KubeletConfig.image: version of Kubernetes 1.20.5 is too old"},
		{name: "protected field", doc: "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.34.12\nconfig:\n  staticPodPath: /x\n",
			err: "KubeletConfig.config.staticPodPath:"},
		{name: "denied flag", doc: "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.34.12\nconfig: {}\nextraArgs:\n  kubeconfig: /x\n",
			err: `KubeletConfig.extraArgs["kubeconfig"]:`},
		{name: "bad DNS address", doc: "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.34.12\nconfig: {}\nclusterDNS: [nope]\n",
			err: "KubeletConfig.clusterDNS[0]:"},
		{name: "conflict", v1: "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.34.12\n", drop: []string{"KubeNodeConfig"},
			err: "KubeletConfig: the kubelet configuration is already set in the v1alpha1 document (machine.kubelet)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeletConfig\nextraArgs:\n  v: \"2\"\n", check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Kubelet.ExtraArgs["v"].String() != "2" || cfg.Machine.Kubelet.Image == "" {
				t.Errorf("kubelet %+v", cfg.Machine.Kubelet)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeletConfig/image", "value": "ghcr.io/siderolabs/kubelet:v1.34.1"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Kubelet.Image != "ghcr.io/siderolabs/kubelet:v1.34.1" {
				t.Errorf("image %q", cfg.Machine.Kubelet.Image)
			}
		}},
	})
}
