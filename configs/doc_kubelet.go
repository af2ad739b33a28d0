package configs

// KubeletConfigDoc is Talos's KubeletConfig document (its Go name differs
// from KubeletConfig, the v1alpha1 machine.kubelet section it folds into):
// the kubelet's image, configuration overrides, flags and cluster DNS.
// As Talos has it, the kubelet reads no manifests directory
// (machine.kubelet.disableManifestsDirectory) and has no extra mounts.
type KubeletConfigDoc struct {
	Image string `yaml:"image"`
	// Config is merged over the kubelet configuration the node writes
	// (machine.kubelet.extraConfig); config: {} changes nothing.
	Config    Unstructured `yaml:"config"`
	ExtraArgs Args         `yaml:"extraArgs,omitempty"`
	// ClusterDNS overrides the DNS service addresses pods are given.
	ClusterDNS                          []string `yaml:"clusterDNS,omitempty"`
	DefaultRuntimeSeccompProfileEnabled *bool    `yaml:"defaultRuntimeSeccompProfileEnabled,omitempty"`
}

// Kind implements Document.
func (*KubeletConfigDoc) Kind() string { return "KubeletConfig" }

// Beyond the image, what it says is checked where it is folded
// (machine.kubelet: extraConfig's protected fields, flags, addresses).
func (k *KubeletConfigDoc) check(v *validator, path string) {
	if k.Image == "" {
		v.requiredImage(path+".image", "kubelet")
	}
}

func (k *KubeletConfigDoc) fold(f *folding) {
	if f.writtenMachine().Kubelet != nil {
		f.conflict("", "machine.kubelet", "the kubelet configuration")
	}

	kl := f.kubelet()
	kl.Image = k.Image
	kl.ExtraConfig = cloneUnstructured(k.Config)
	kl.ExtraArgs = k.ExtraArgs.Clone()
	kl.ClusterDNS = append([]string(nil), k.ClusterDNS...)
	kl.DefaultRuntimeSeccompProfileEnabled = k.DefaultRuntimeSeccompProfileEnabled != nil && *k.DefaultRuntimeSeccompProfileEnabled
	kl.DisableManifestsDirectory = true

	f.alias("machine.kubelet.image", "image")
	f.alias("machine.kubelet.extraConfig", "config")
	f.alias("machine.kubelet.extraArgs", "extraArgs")
	f.alias("machine.kubelet.clusterDNS", "clusterDNS")
	f.alias("machine.kubelet.defaultRuntimeSeccompProfileEnabled", "defaultRuntimeSeccompProfileEnabled")
	f.alias("machine.kubelet.disableManifestsDirectory", "")
}
