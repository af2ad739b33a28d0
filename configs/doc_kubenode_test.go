package configs_test

import (
	"maps"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeNodeConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into the kubelet and the node metadata", doc: `kind: KubeNodeConfig
skipNodeRegistration: false
registerWithFQDN: true
nodeIP:
  validSubnets: [10.0.0.0/8, "!10.0.0.3/32"]
labels:
  node-role.kubernetes.io/control-plane: ""
  rack: r1
annotations:
  customer.io/rack: r13a25
taints:
  node-role.kubernetes.io/control-plane: NoSchedule
  dedicated: gpu:NoExecute
`, fold: func(t *testing.T, cfg *configs.Config) {
			k, m := cfg.Machine.Kubelet, cfg.Machine

			switch {
			case !k.RegisterWithFQDN || k.SkipNodeRegistration || k.NodeIP == nil || len(k.NodeIP.ValidSubnets) != 2:
				t.Errorf("kubelet: %+v", k)
			case !maps.Equal(m.NodeLabels, map[string]string{"node-role.kubernetes.io/control-plane": "", "rack": "r1"}):
				t.Errorf("labels %v", m.NodeLabels)
			case m.NodeAnnotations["customer.io/rack"] != "r13a25":
				t.Errorf("annotations %v", m.NodeAnnotations)
			// The control-plane taint is the kubelet's registration taint
			// (no allowSchedulingOnControlPlanes); the others are nodeTaints.
			case cfg.Cluster.AllowSchedulingOnControlPlanes || !maps.Equal(m.NodeTaints, map[string]string{"dedicated": "gpu:NoExecute"}):
				t.Errorf("taints %v, scheduling on control planes %v", m.NodeTaints, cfg.Cluster.AllowSchedulingOnControlPlanes)
			case !configs.HasControlPlaneLabel(cfg):
				t.Error("the role label is listed")
			}
		}},
		// Talos's default: nodeIP {} is an address of the service
		// subnets' family, as without machine.kubelet.nodeIP.
		{name: "nodeIP {} and no taint", doc: "kind: KubeNodeConfig\nnodeIP: {}\n", fold: func(t *testing.T, cfg *configs.Config) {
			if k := cfg.Machine.Kubelet; k.NodeIP == nil || len(k.NodeIP.ValidSubnets) != 0 {
				t.Errorf("nodeIP %+v", k.NodeIP)
			}

			// Nothing is added to what it lists: no taint, no role label.
			if !cfg.Cluster.AllowSchedulingOnControlPlanes || configs.HasControlPlaneLabel(cfg) || len(cfg.Machine.NodeLabels) != 0 {
				t.Error("a control plane without the taint or label in its KubeNodeConfig gets them")
			}
		}},
		{name: "a worker's taint", worker: true, doc: "kind: KubeNodeConfig\nnodeIP: {}\ntaints:\n  node-role.kubernetes.io/control-plane: NoSchedule\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				if cfg.Machine.NodeTaints["node-role.kubernetes.io/control-plane"] != "NoSchedule" || cfg.Cluster.AllowSchedulingOnControlPlanes {
					t.Errorf("worker taints %v", cfg.Machine.NodeTaints)
				}
			}},
		{name: "unknown field", doc: "kind: KubeNodeConfig\nnodeIP: {}\nnodeIPs: {}\n", decodeErr: `unknown field "nodeIPs" in KubeNodeConfig (did you mean "nodeIP"?)`},
		{name: "wrong type", doc: "kind: KubeNodeConfig\nnodeIP: {}\nlabels: [a]\n", decodeErr: "KubeNodeConfig.labels: expected a mapping, got a sequence"},
		{name: "bad subnet", doc: "kind: KubeNodeConfig\nnodeIP:\n  validSubnets: [10.0.0.0/99]\n", err: "KubeNodeConfig.nodeIP.validSubnets[0]:"},
		{name: "bad label", doc: "kind: KubeNodeConfig\nnodeIP: {}\nlabels:\n  \"bad key!\": x\n", err: `KubeNodeConfig.labels["bad key!"]:`},
		{name: "bad taint", doc: "kind: KubeNodeConfig\nnodeIP: {}\ntaints:\n  a: x:Sometimes\n",
			err: `KubeNodeConfig.taints["a"]: invalid taint "x:Sometimes": the effect "Sometimes" must be NoSchedule, PreferNoSchedule or NoExecute`},
		{name: "conflict with nodeLabels", v1: "machine:\n  nodeLabels:\n    a: b\n",
			err: "KubeNodeConfig.labels: the set of node labels is already set in the v1alpha1 document (machine.nodeLabels)"},
		{name: "conflict with nodeIP", v1: "machine:\n  kubelet:\n    nodeIP:\n      validSubnets: [10.0.0.0/8]\n", drop: []string{"KubeletConfig"},
			err: "KubeNodeConfig.nodeIP: the node IP selection is already set in the v1alpha1 document (machine.kubelet.nodeIP)"},
		{name: "conflict with allowSchedulingOnControlPlanes", v1: "cluster:\n  allowSchedulingOnControlPlanes: true\n",
			err: "KubeNodeConfig.taints: scheduling on control planes (the control-plane taint) is already set in the v1alpha1 document"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeNodeConfig\nlabels:\n  zone: a\n", check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.NodeLabels["zone"] != "a" || !configs.HasControlPlaneLabel(cfg) {
				t.Errorf("labels %v", cfg.Machine.NodeLabels)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "remove", "path": "/KubeNodeConfig/taints"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if !cfg.Cluster.AllowSchedulingOnControlPlanes {
				t.Error("without the taint, pods are scheduled on the control plane")
			}
		}},
	})
}
