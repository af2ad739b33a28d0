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
				if cm.Image != "registry.k8s.io/kube-controller-manager:v1.34.12" || cm.ExtraArgs["v"] != "2" || cm.Env["A"] != "b" || cm.Resources.Limits["memory"] != "2Gi" {
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
			if cfg.Cluster.ControllerManager.ExtraArgs["v"] != "3" {
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
			if cfg.Cluster.Scheduler.ExtraArgs["v"] != "2" {
				t.Errorf("%+v", cfg.Cluster.Scheduler)
			}
		}},
	})
}

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
