package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeProxyConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "switch, image and mode fold; config and resources are read from the document",
			doc: "kind: KubeProxyConfig\nimage: registry.k8s.io/kube-proxy:v1.34.12\nmode: nftables\nconfig:\n  bindAddressHardFail: true\nresources:\n  requests:\n    cpu: 100m\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				p := cfg.Cluster.Proxy
				if p.Disabled || p.Image != "registry.k8s.io/kube-proxy:v1.34.12" || p.Mode != "nftables" {
					t.Errorf("proxy %+v", p)
				}

				if d := configs.DocumentOf[*configs.KubeProxyConfig](cfg); d.Config["bindAddressHardFail"] != true || d.Resources.Requests["cpu"] != "100m" {
					t.Errorf("document %+v", d)
				}
			}},
		// Talos checks nothing else of a disabled kube-proxy.
		{name: "disabled", doc: "kind: KubeProxyConfig\nenabled: false\nconfig: {}\n", fold: func(t *testing.T, cfg *configs.Config) {
			if !cfg.Cluster.Proxy.Disabled {
				t.Error("not disabled")
			}
		}},
		{name: "ipvs", doc: "kind: KubeProxyConfig\nimage: registry.k8s.io/kube-proxy:v1.34.12\nmode: ipvs\nconfig: {}\n",
			warn: `KubeProxyConfig.mode: proxy mode "ipvs" is not recommended, please switch to nftables if possible`},
		{name: "extra args", doc: "kind: KubeProxyConfig\nimage: registry.k8s.io/kube-proxy:v1.34.12\nconfig: {}\nextraArgs:\n  v: \"2\"\n",
			warn: "KubeProxyConfig.extraArgs: extra arguments for kube-proxy may not work as expected, please use configuration instead"},
		{name: "unknown field", doc: "kind: KubeProxyConfig\nimage: x\nconfig: {}\ndisabled: true\n", decodeErr: `unknown field "disabled" in KubeProxyConfig`},
		{name: "wrong type", doc: "kind: KubeProxyConfig\nimage: x\nconfig: {}\nresources: x\n", decodeErr: "KubeProxyConfig.resources: expected a mapping"},
		{name: "no image", doc: "kind: KubeProxyConfig\nconfig: {}\n", err: "KubeProxyConfig.image: kube-proxy image cannot be empty"},
		{name: "bad mode", doc: "kind: KubeProxyConfig\nimage: registry.k8s.io/kube-proxy:v1.34.12\nmode: userspace\nconfig: {}\n",
			err: `KubeProxyConfig.mode: invalid proxy mode "userspace": supported modes are iptables, ipvs and nftables`},
		{name: "kubeconfig in the configuration", doc: "kind: KubeProxyConfig\nimage: registry.k8s.io/kube-proxy:v1.34.12\nconfig:\n  clientConnection:\n    kubeconfig: /x\n",
			err: "KubeProxyConfig.config.clientConnection.kubeconfig: the kubeconfig is set by talosbox"},
		{name: "config flag with a configuration", doc: "kind: KubeProxyConfig\nimage: registry.k8s.io/kube-proxy:v1.34.12\nconfig:\n  bindAddressHardFail: true\nextraArgs:\n  config: /x\n",
			warn: "extra arguments for kube-proxy", err: `KubeProxyConfig.extraArgs["config"]: kube-proxy extra argument "config" is not allowed`},
		{name: "bad resource", doc: "kind: KubeProxyConfig\nimage: registry.k8s.io/kube-proxy:v1.34.12\nconfig: {}\nresources:\n  limits:\n    memory: lots\n",
			err: `KubeProxyConfig.resources.limits["memory"]:`},
		{name: "only on control planes", worker: true, doc: "kind: KubeProxyConfig\nenabled: false\nconfig: {}\n",
			err: "document kind KubeProxyConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "cluster:\n  proxy:\n    disabled: true\n",
			err: "KubeProxyConfig: the kube-proxy config is already set in the v1alpha1 document (cluster.proxy)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeProxyConfig\nconfig:\n  metricsBindAddress: 0.0.0.0:10249\n", check: func(t *testing.T, cfg *configs.Config) {
			if d := configs.DocumentOf[*configs.KubeProxyConfig](cfg); d.Config["metricsBindAddress"] != "0.0.0.0:10249" || d.Image == "" {
				t.Errorf("%+v", d)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeProxyConfig/image", "value": "registry.k8s.io/kube-proxy:v1.34.1"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.Proxy.Image != "registry.k8s.io/kube-proxy:v1.34.1" {
				t.Errorf("%+v", cfg.Cluster.Proxy)
			}
		}},
	})
}
