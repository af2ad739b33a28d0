package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeFlannelCNIConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "flannel with its backend", doc: "kind: KubeFlannelCNIConfig\nbackendType: host-gw\nbackendMTU: 1400\nbackendExtraConfig:\n  DirectRouting: true\nresources:\n  limits:\n    memory: 100Mi\nextraArgs: [--iface-can-reach=192.168.1.1]\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				cni := cfg.Cluster.Network.CNI
				if cni.Name != "flannel" || cni.Flannel.ExtraArgs[0] != "--iface-can-reach=192.168.1.1" {
					t.Errorf("cni %+v", cni)
				}

				if d := configs.DocumentOf[*configs.KubeFlannelCNIConfig](cfg); d.BackendType != "host-gw" || d.BackendMTU != 1400 || d.BackendExtraConfig["DirectRouting"] != true {
					t.Errorf("%+v", d)
				}
			}},
		{name: "unknown field", doc: "kind: KubeFlannelCNIConfig\nbackend: vxlan\n", decodeErr: `unknown field "backend" in KubeFlannelCNIConfig`},
		{name: "wrong type", doc: "kind: KubeFlannelCNIConfig\nbackendType: vxlan\nbackendPort: -1\n", decodeErr: "KubeFlannelCNIConfig.backendPort:"},
		{name: "no backend", doc: "kind: KubeFlannelCNIConfig\nbackendPort: 4789\n", err: "KubeFlannelCNIConfig.backendType: flannel backend type must be specified"},
		// talosbox has no kube-network-policies image: refused, saying so.
		{name: "kube-network-policies", doc: "kind: KubeFlannelCNIConfig\nbackendType: vxlan\nkubeNetworkPoliciesEnabled: true\n",
			err: "KubeFlannelCNIConfig.kubeNetworkPoliciesEnabled: talosbox cannot honour kubeNetworkPoliciesEnabled"},
		{name: "extra config over the backend", doc: "kind: KubeFlannelCNIConfig\nbackendType: vxlan\nbackendExtraConfig:\n  Port: 8472\n",
			warn: "KubeFlannelCNIConfig.backendExtraConfig.Port: backendExtraConfig.Port overrides the document's own backend setting"},
		{name: "bad resource", doc: "kind: KubeFlannelCNIConfig\nbackendType: vxlan\nresources:\n  requests:\n    gpu: 1\n", err: `KubeFlannelCNIConfig.resources.requests["gpu"]: unsupported pod resource "gpu"`},
		{name: "only on control planes", worker: true, doc: "kind: KubeFlannelCNIConfig\nbackendType: vxlan\n",
			err: "document kind KubeFlannelCNIConfig is only allowed on control plane machines"},
		{name: "conflict", drop: []string{"KubeNetworkConfig"}, v1: "cluster:\n  network:\n    dnsDomain: cluster.local\n",
			err: "KubeFlannelCNIConfig: the CNI (a KubeFlannelCNIConfig with the v1alpha1 cluster network) is already set in the v1alpha1 document (cluster.network)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeFlannelCNIConfig\nbackendMTU: 1300\n", check: func(t *testing.T, cfg *configs.Config) {
			if d := configs.DocumentOf[*configs.KubeFlannelCNIConfig](cfg); d.BackendMTU != 1300 || d.BackendType != "vxlan" {
				t.Errorf("%+v", d)
			}
		}},
		{name: "JSON patch removes it: no CNI", patch: `[{"op": "remove", "path": "/KubeFlannelCNIConfig"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.Network.CNI.Name != "none" {
				t.Errorf("cni %+v", cfg.Cluster.Network.CNI)
			}
		}},
	})
}
