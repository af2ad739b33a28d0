package configs

// KubeFlannelCNIConfig is Talos's KubeFlannelCNIConfig: deploy flannel as
// the CNI (cluster.network.cni flannel, with its extraArgs). Without it a
// cluster whose network is a KubeNetworkConfig has no CNI. Its backend,
// port, MTU, backend settings and resources have no v1alpha1 field: the
// node renders flannel's net-conf.json and DaemonSet from the document.
type KubeFlannelCNIConfig struct {
	// BackendType is flannel's backend: vxlan (the default gen config
	// writes), host-gw, wireguard, ...
	BackendType        string           `yaml:"backendType"`
	BackendPort        uint16           `yaml:"backendPort,omitempty"`
	BackendMTU         uint32           `yaml:"backendMTU,omitempty"`
	BackendExtraConfig Unstructured     `yaml:"backendExtraConfig,omitempty"`
	Resources          *ResourcesConfig `yaml:"resources,omitempty"`
	ExtraArgs          []string         `yaml:"extraArgs,omitempty"`
	// KubeNetworkPoliciesEnabled deploys kube-network-policies next to
	// flannel; talosbox has no such image, so it refuses it.
	KubeNetworkPoliciesEnabled *bool `yaml:"kubeNetworkPoliciesEnabled,omitempty"`
}

// Kind implements Document.
func (*KubeFlannelCNIConfig) Kind() string { return "KubeFlannelCNIConfig" }

func (k *KubeFlannelCNIConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if k.BackendType == "" {
		v.errorf(path+".backendType", "flannel backend type must be specified (vxlan, host-gw, wireguard, ...)")
	}

	if k.KubeNetworkPoliciesEnabled != nil && *k.KubeNetworkPoliciesEnabled {
		v.errorf(path+".kubeNetworkPoliciesEnabled", "talosbox cannot honour kubeNetworkPoliciesEnabled: it ships no kube-network-policies image, "+
			"so NetworkPolicies would not be enforced; remove it, or deploy a network policy controller yourself")
	}

	for _, key := range []string{"Type", "Port", "MTU"} {
		if _, ok := k.BackendExtraConfig[key]; ok {
			v.warnf(path+".backendExtraConfig."+key, "backendExtraConfig.%s overrides the document's own backend setting", key)
		}
	}

	v.podResources(path+".resources", k.Resources)
}

func (k *KubeFlannelCNIConfig) fold(f *folding) {
	if f.writtenCluster().Network != nil {
		f.conflict("", "cluster.network", "the CNI (a KubeFlannelCNIConfig with the v1alpha1 cluster network)")
	}

	f.clusterNetwork().CNI = &CNIConfig{Name: "flannel", Flannel: &FlannelConfig{ExtraArgs: append([]string(nil), k.ExtraArgs...)}}
	f.alias("cluster.network.cni", "")
	f.alias("cluster.network.cni.flannel.extraArgs", "extraArgs")
}
