package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeCoreDNSConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		// enabled: true and no image: the default CoreDNS, deployed.
		{name: "enabled", doc: "kind: KubeCoreDNSConfig\nenabled: true\n", fold: func(t *testing.T, cfg *configs.Config) {
			if d := cfg.Cluster.CoreDNS; d.Disabled || d.Image != "" {
				t.Errorf("coreDNS %+v", d)
			}
		}},
		{name: "disabled", doc: "kind: KubeCoreDNSConfig\nenabled: false\n", fold: func(t *testing.T, cfg *configs.Config) {
			if !cfg.Cluster.CoreDNS.Disabled {
				t.Error("not disabled")
			}
		}},
		{name: "no document: deployed", drop: []string{"KubeCoreDNSConfig"}, fold: func(t *testing.T, cfg *configs.Config) {
			if d := cfg.Cluster.CoreDNS; d != nil && d.Disabled {
				t.Error("disabled")
			}
		}},
		{name: "image", doc: "kind: KubeCoreDNSConfig\nimage: registry.k8s.io/coredns/coredns:v1.12.4\n", fold: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.CoreDNS.Image != "registry.k8s.io/coredns/coredns:v1.12.4" {
				t.Errorf("%+v", cfg.Cluster.CoreDNS)
			}
		}},
		{name: "unknown field", doc: "kind: KubeCoreDNSConfig\ndisabled: true\n", decodeErr: `unknown field "disabled" in KubeCoreDNSConfig`},
		{name: "wrong type", doc: "kind: KubeCoreDNSConfig\nenabled: [true]\n", decodeErr: "KubeCoreDNSConfig.enabled:"},
		{name: "bad image", doc: "kind: KubeCoreDNSConfig\nimage: \"bad image\"\n", err: "KubeCoreDNSConfig.image:"},
		{name: "only on control planes", worker: true, doc: "kind: KubeCoreDNSConfig\nenabled: true\n",
			err: "document kind KubeCoreDNSConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "cluster:\n  coreDNS:\n    disabled: true\n",
			err: "KubeCoreDNSConfig: the CoreDNS config is already set in the v1alpha1 document (cluster.coreDNS)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeCoreDNSConfig\nenabled: false\n", check: func(t *testing.T, cfg *configs.Config) {
			if !cfg.Cluster.CoreDNS.Disabled {
				t.Error("not disabled")
			}
		}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeCoreDNSConfig/image", "value": "registry.k8s.io/coredns/coredns:v1.12.4"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.CoreDNS.Image == "" {
				t.Error("no image")
			}
		}},
	})
}
