package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeClusterConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into clusterName and the endpoint", doc: "kind: KubeClusterConfig\nclusterName: lab\nendpoint: https://lab.example.com:6443\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				if cfg.Cluster.ClusterName != "lab" || cfg.Cluster.ControlPlane.Endpoint != "https://lab.example.com:6443" {
					t.Errorf("cluster %q endpoint %+v", cfg.Cluster.ClusterName, cfg.Cluster.ControlPlane)
				}
			}},
		{name: "on a worker", worker: true, doc: "kind: KubeClusterConfig\nclusterName: lab\nendpoint: https://lab:6443\n"},
		{name: "unknown field", doc: "kind: KubeClusterConfig\nclusterName: lab\nendpoint: https://lab:6443\nendpoints: []\n",
			decodeErr: `unknown field "endpoints" in KubeClusterConfig (did you mean "endpoint"?)`},
		{name: "wrong type", doc: "kind: KubeClusterConfig\nclusterName: [lab]\nendpoint: https://lab:6443\n",
			decodeErr: "KubeClusterConfig.clusterName: expected a single value, got a sequence"},
		{name: "no name", doc: "kind: KubeClusterConfig\nendpoint: https://lab:6443\n", err: "KubeClusterConfig.clusterName: clusterName must be specified"},
		{name: "no endpoint", doc: "kind: KubeClusterConfig\nclusterName: lab\n", err: "KubeClusterConfig.endpoint: endpoint must be specified"},
		// The endpoint's rules are cluster.controlPlane.endpoint's, said
		// where the document wrote it.
		{name: "http endpoint", doc: "kind: KubeClusterConfig\nclusterName: lab\nendpoint: http://lab:6443\n",
			err: `KubeClusterConfig.endpoint: invalid controlplane endpoint: scheme must be https, got "http"`},
		{name: "conflict with clusterName", v1: "cluster:\n  clusterName: other\n",
			err: "KubeClusterConfig.clusterName: the cluster name is already set in the v1alpha1 document (cluster.clusterName): set it in one place (Talos refuses both)"},
		{name: "conflict with the endpoint", v1: "cluster:\n  controlPlane:\n    endpoint: https://other:6443\n",
			err: "KubeClusterConfig.endpoint: the cluster endpoint is already set in the v1alpha1 document (cluster.controlPlane.endpoint)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeClusterConfig\nendpoint: https://vip:6443\n", check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.ControlPlane.Endpoint != "https://vip:6443" || cfg.Cluster.ClusterName != "base" {
				t.Errorf("%+v %q", cfg.Cluster.ControlPlane, cfg.Cluster.ClusterName)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeClusterConfig/clusterName", "value": "renamed"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.ClusterName != "renamed" {
				t.Errorf("clusterName %q", cfg.Cluster.ClusterName)
			}
		}},
	})
}
