package configs

// KubeCredentialProviderConfig is Talos's KubeCredentialProviderConfig:
// the kubelet's image credential providers,
// machine.kubelet.credentialProviderConfig.
type KubeCredentialProviderConfig struct {
	Configuration Unstructured `yaml:"configuration" merge:"replace"`
}

// Kind implements Document.
func (*KubeCredentialProviderConfig) Kind() string { return "KubeCredentialProviderConfig" }

// The configuration is checked where it is folded.
func (k *KubeCredentialProviderConfig) check(*validator, string) {}

func (k *KubeCredentialProviderConfig) fold(f *folding) {
	if f.writtenMachine().Kubelet != nil {
		f.conflict("", "machine.kubelet", "the kubelet's credential provider config (a KubeCredentialProviderConfig with the legacy kubelet configuration)")
	}

	f.kubelet().CredentialProviderConfig = cloneUnstructured(k.Configuration)
	f.alias("machine.kubelet.credentialProviderConfig", "configuration")
}
