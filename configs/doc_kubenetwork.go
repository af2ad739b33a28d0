package configs

import (
	"net/netip"
	"strconv"
)

// KubeNetworkConfig is Talos's KubeNetworkConfig: the cluster's DNS domain
// and pod and service subnets (cluster.network), and the size of each
// node's share of the pod subnets (kube-controller-manager's
// --node-cidr-mask-size-ipv4/-ipv6). The CNI is a document of its own:
// without a KubeFlannelCNIConfig the cluster has none (cni: none), and
// one is deployed from manifests (KubeExternalManifestConfig,
// KubeInlineManifestConfig).
type KubeNetworkConfig struct {
	DNSDomain            string   `yaml:"dnsDomain"`
	PodSubnets           []string `yaml:"podSubnets" merge:"replace"`
	ServiceSubnets       []string `yaml:"serviceSubnets" merge:"replace"`
	NodeCIDRMaskSizeIPv4 int      `yaml:"nodeCIDRMaskSizeIPv4,omitempty"`
	NodeCIDRMaskSizeIPv6 int      `yaml:"nodeCIDRMaskSizeIPv6,omitempty"`
}

// Kind implements Document.
func (*KubeNetworkConfig) Kind() string { return "KubeNetworkConfig" }

// check has Talos's rules; the subnets' overlap, families and service
// range sizes are checked where they are folded (cluster.network).
func (k *KubeNetworkConfig) check(v *validator, path string) {
	v4ok := k.NodeCIDRMaskSizeIPv4 >= 0 && k.NodeCIDRMaskSizeIPv4 <= 32
	v6ok := k.NodeCIDRMaskSizeIPv6 >= 0 && k.NodeCIDRMaskSizeIPv6 <= 128

	if !v4ok {
		v.errorf(path+".nodeCIDRMaskSizeIPv4", "nodeCIDRMaskSizeIPv4 must be between 1 and 32, got %d", k.NodeCIDRMaskSizeIPv4)
	}

	if !v6ok {
		v.errorf(path+".nodeCIDRMaskSizeIPv6", "nodeCIDRMaskSizeIPv6 must be between 1 and 128, got %d", k.NodeCIDRMaskSizeIPv6)
	}

	v.kubeSubnets(path+".podSubnets", "pod", k.PodSubnets)
	v.kubeSubnets(path+".serviceSubnets", "service", k.ServiceSubnets)

	if len(k.PodSubnets) != len(k.ServiceSubnets) {
		v.errorf(path, "the number of pod subnets (%d) must match the number of service subnets (%d): one of each per IP family",
			len(k.PodSubnets), len(k.ServiceSubnets))
	}
}

// kubeSubnets are Talos's count rules of a KubeNetworkConfig subnet list:
// one subnet, or two for a dual-stack cluster (one per family).
func (v *validator) kubeSubnets(path, what string, subnets []string) {
	switch {
	case len(subnets) == 0:
		v.errorf(path, "%s subnets: at least one subnet must be specified", what)
	case len(subnets) > 2:
		v.errorf(path, "%s subnets: at most two subnets can be specified for dual-stack clusters", what)
	}

	for i, s := range subnets {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue // said where it is folded
		}

		if p.Masked() != p {
			v.errorf(indexPath(path, i), "%s subnets: invalid subnet: %s is not a valid CIDR (its host bits are set: write %s)", what, s, p.Masked())
		}
	}
}

func (k *KubeNetworkConfig) fold(f *folding) {
	if f.writtenCluster().Network != nil {
		f.conflict("", "cluster.network", "the cluster network (dnsDomain, podSubnets, serviceSubnets)")
	}

	n := f.clusterNetwork()
	n.DNSDomain = k.DNSDomain
	n.PodSubnets = append([]string(nil), k.PodSubnets...)
	n.ServiceSubnets = append([]string(nil), k.ServiceSubnets...)

	f.alias("cluster.network.dnsDomain", "dnsDomain")
	f.alias("cluster.network.podSubnets", "podSubnets")
	f.alias("cluster.network.serviceSubnets", "serviceSubnets")

	// Without a KubeFlannelCNIConfig there is no CNI to deploy.
	if DocumentOf[*KubeFlannelCNIConfig](f.cfg) == nil && n.CNI == nil {
		n.CNI = &CNIConfig{Name: "none"}
	}

	// The node masks are kube-controller-manager's flags, set only for
	// the families the pods have (it refuses the other) and only where
	// its own extraArgs do not (Talos merges extraArgs over them).
	for _, m := range []struct {
		flag, sub string
		size      int
		v4        bool
	}{
		{"node-cidr-mask-size-ipv4", "nodeCIDRMaskSizeIPv4", k.NodeCIDRMaskSizeIPv4, true},
		{"node-cidr-mask-size-ipv6", "nodeCIDRMaskSizeIPv6", k.NodeCIDRMaskSizeIPv6, false},
	} {
		if m.size == 0 || !hasFamily(k.PodSubnets, m.v4) || !f.cfg.IsControlPlane() {
			continue
		}

		if cmd := DocumentOf[*KubeControllerManagerConfig](f.cfg); cmd != nil {
			if _, set := cmd.ExtraArgs[m.flag]; set {
				continue
			}
		}

		cm := f.controllerManager()
		if _, set := cm.ExtraArgs[m.flag]; set {
			continue
		}

		if cm.ExtraArgs == nil {
			cm.ExtraArgs = Args{}
		}

		cm.ExtraArgs.Set(m.flag, strconv.Itoa(m.size))
		f.alias(keyPath("cluster.controllerManager.extraArgs", m.flag), m.sub)
	}
}

func hasFamily(subnets []string, v4 bool) bool {
	for _, s := range subnets {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() == v4 {
			return true
		}
	}

	return false
}
