package configs_test

import (
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeNetworkConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "dual stack with node masks", doc: `kind: KubeNetworkConfig
dnsDomain: example.com
podSubnets: [10.200.0.0/16, "fd00:10::/56"]
serviceSubnets: [10.100.0.0/16, "fd00:20::/112"]
nodeCIDRMaskSizeIPv4: 25
nodeCIDRMaskSizeIPv6: 64
`, fold: func(t *testing.T, cfg *configs.Config) {
			n := cfg.Cluster.Network
			if n.DNSDomain != "example.com" || !slices.Equal(n.PodSubnets, []string{"10.200.0.0/16", "fd00:10::/56"}) || len(n.ServiceSubnets) != 2 {
				t.Errorf("network %+v", n)
			}

			// The node masks are the controller-manager's flags.
			if a := cfg.Cluster.ControllerManager.ExtraArgs; a["node-cidr-mask-size-ipv4"].String() != "25" || a["node-cidr-mask-size-ipv6"].String() != "64" {
				t.Errorf("controller-manager flags %v", a)
			}
		}},
		// Without a KubeFlannelCNIConfig there is no CNI (Talos 1.14).
		{name: "no flannel document: no CNI", drop: []string{"KubeFlannelCNIConfig"}, fold: func(t *testing.T, cfg *configs.Config) {
			if c := cfg.Cluster.Network.CNI; c == nil || c.Name != "none" {
				t.Errorf("cni %+v", c)
			}
		}},
		// A family the pods lack gets no flag: the controller-manager
		// would refuse it.
		{name: "mask of an absent family", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\nnodeCIDRMaskSizeIPv6: 80\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				if _, ok := cfg.Cluster.ControllerManager.ExtraArgs["node-cidr-mask-size-ipv6"]; ok {
					t.Error("an IPv6 mask for IPv4 pods")
				}
			}},
		// The controller-manager's own flag wins, as in Talos.
		{name: "the controller-manager's flag wins", doc: "kind: KubeControllerManagerConfig\nimage: registry.k8s.io/kube-controller-manager:v1.34.12\nextraArgs:\n  node-cidr-mask-size-ipv4: \"26\"\n",
			v1: "apiVersion: v1alpha1\nkind: KubeNetworkConfig\nnodeCIDRMaskSizeIPv4: 23\n", fold: func(t *testing.T, cfg *configs.Config) {
				if got := cfg.Cluster.ControllerManager.ExtraArgs["node-cidr-mask-size-ipv4"].String(); got != "26" {
					t.Errorf("mask %q", got)
				}
			}},
		{name: "on a worker", worker: true, doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\nnodeCIDRMaskSizeIPv4: 25\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				if cfg.Cluster.ControllerManager != nil {
					t.Error("a worker's config gets a controller-manager section")
				}
			}},
		{name: "unknown field", doc: "kind: KubeNetworkConfig\npodSubnet: [10.244.0.0/16]\n", decodeErr: `unknown field "podSubnet" in KubeNetworkConfig (did you mean "podSubnets"?)`},
		{name: "wrong type", doc: "kind: KubeNetworkConfig\npodSubnets: 10.244.0.0/16\n", decodeErr: `KubeNetworkConfig.podSubnets: expected a sequence, got "10.244.0.0/16"`},
		{name: "mask out of range", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\nnodeCIDRMaskSizeIPv4: 33\n",
			err: "KubeNetworkConfig.nodeCIDRMaskSizeIPv4: nodeCIDRMaskSizeIPv4 must be between 1 and 32, got 33"},
		{name: "mask too long for the pods", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\nnodeCIDRMaskSizeIPv4: 12\n",
			err: "KubeNetworkConfig.podSubnets[0]: pod subnet 10.244.0.0/16 is smaller than one node's share (/12"},
		{name: "no pod subnet", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: []\nserviceSubnets: [10.96.0.0/12]\n",
			err: "KubeNetworkConfig.podSubnets: pod subnets: at least one subnet must be specified"},
		{name: "three subnets", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.1.0.0/16, 10.2.0.0/16, 10.3.0.0/16]\nserviceSubnets: [10.96.0.0/12]\n",
			err: "pod subnets: at most two subnets can be specified for dual-stack clusters"},
		{name: "counts differ", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.244.0.0/16, \"fd00::/56\"]\nserviceSubnets: [10.96.0.0/12]\n",
			err: "KubeNetworkConfig: the number of pod subnets (2) must match the number of service subnets (1)"},
		{name: "host bits", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.244.0.1/16]\nserviceSubnets: [10.96.0.0/12]\n",
			warn: "10.244.0.1/16 has host bits set", err: "KubeNetworkConfig.podSubnets[0]: pod subnets: invalid subnet: 10.244.0.1/16 is not a valid CIDR"},
		{name: "bad CIDR", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.244.0.0/99]\nserviceSubnets: [10.96.0.0/12]\n",
			err: `KubeNetworkConfig.podSubnets[0]: invalid CIDR "10.244.0.0/99"`},
		{name: "overlap", doc: "kind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets: [10.96.0.0/16]\nserviceSubnets: [10.96.0.0/12]\n",
			err: "KubeNetworkConfig.serviceSubnets[0]: service subnet 10.96.0.0/12 overlaps pod subnet 10.96.0.0/16"},
		{name: "conflict", v1: "cluster:\n  network:\n    dnsDomain: other.local\n", drop: []string{"KubeFlannelCNIConfig"},
			err: "KubeNetworkConfig: the cluster network (dnsDomain, podSubnets, serviceSubnets) is already set in the v1alpha1 document (cluster.network)"},
	})

	runPatchCases(t, []patchCase{
		// podSubnets are replaced by a strategic merge, as Talos marks them.
		{name: "strategic merge replaces the subnets", patch: "apiVersion: v1alpha1\nkind: KubeNetworkConfig\npodSubnets: [10.200.0.0/16]\n", check: func(t *testing.T, cfg *configs.Config) {
			if !slices.Equal(cfg.Cluster.Network.PodSubnets, []string{"10.200.0.0/16"}) {
				t.Errorf("pods %v", cfg.Cluster.Network.PodSubnets)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeNetworkConfig/dnsDomain", "value": "corp.local"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.Network.DNSDomain != "corp.local" {
				t.Errorf("domain %q", cfg.Cluster.Network.DNSDomain)
			}
		}},
	})
}
