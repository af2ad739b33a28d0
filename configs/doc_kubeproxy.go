package configs

import "slices"

// KubeProxyConfig is Talos's KubeProxyConfig: the kube-proxy DaemonSet.
// Its switch, image, mode and flags are cluster.proxy's. Its
// configuration (a KubeProxyConfiguration) and resources have no
// v1alpha1 field: the node reads them from the document, and with a
// configuration runs kube-proxy from a configuration file, as Talos
// does, the cluster CIDR, mode and conntrack default filled in where the
// configuration leaves them out. `config: {}` is kube-proxy's flags as
// v1alpha1 gives them.
type KubeProxyConfig struct {
	Enabled *bool  `yaml:"enabled,omitempty"`
	Image   string `yaml:"image,omitempty"`
	// Mode is iptables, ipvs or nftables (the default).
	Mode      string           `yaml:"mode,omitempty"`
	Config    Unstructured     `yaml:"config"`
	ExtraArgs Args             `yaml:"extraArgs,omitempty"`
	Resources *ResourcesConfig `yaml:"resources,omitempty"`
}

// Kind implements Document.
func (*KubeProxyConfig) Kind() string { return "KubeProxyConfig" }

func (k *KubeProxyConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if !enabled(k.Enabled) {
		return // Talos checks nothing else of a disabled kube-proxy
	}

	if k.Image == "" {
		v.requiredImage(path+".image", "kube-proxy")
	}

	switch k.Mode {
	case "", "nftables":
	case "iptables", "ipvs":
		v.warnf(path+".mode", "proxy mode %q is not recommended, please switch to nftables if possible", k.Mode)
	default:
		v.errorf(path+".mode", "invalid proxy mode %q: supported modes are iptables, ipvs and nftables", k.Mode)
	}

	if len(k.ExtraArgs) > 0 {
		v.warnf(path+".extraArgs", "extra arguments for kube-proxy may not work as expected, please use configuration instead")
	}

	if _, ok := k.ExtraArgs["config"]; ok && len(k.Config) > 0 {
		v.errorf(keyPath(path+".extraArgs", "config"), "kube-proxy extra argument \"config\" is not allowed: talosbox points it at the configuration of config")
	}

	if cc, ok := k.Config["clientConnection"].(map[string]any); ok {
		if _, ok := cc["kubeconfig"]; ok {
			v.errorf(path+".config.clientConnection.kubeconfig", "the kubeconfig is set by talosbox (the in-cluster one) and cannot be overridden")
		}
	}

	if m, ok := k.Config["mode"].(string); ok && !slices.Contains([]string{"", "iptables", "ipvs", "nftables"}, m) {
		v.errorf(path+".config.mode", "invalid proxy mode %q: supported modes are iptables, ipvs and nftables", m)
	}

	v.podResources(path+".resources", k.Resources)
}

func (k *KubeProxyConfig) fold(f *folding) {
	if f.writtenCluster().Proxy != nil {
		f.conflict("", "cluster.proxy", "the kube-proxy config")
	}

	f.cluster().Proxy = &ProxyConfig{Disabled: !enabled(k.Enabled), Image: k.Image, Mode: k.Mode, ExtraArgs: k.ExtraArgs.Clone()}
	f.alias("cluster.proxy", "")
	f.alias("cluster.proxy.disabled", "enabled")
	f.alias("cluster.proxy.image", "image")
	f.alias("cluster.proxy.mode", "mode")
	f.alias("cluster.proxy.extraArgs", "extraArgs")
}
