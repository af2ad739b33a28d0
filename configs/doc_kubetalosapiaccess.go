package configs

// KubeTalosAPIAccessConfig is Talos's KubeTalosAPIAccessConfig: Talos API
// access for pods, by service account, in the listed namespaces with the
// listed roles, machine.features.kubernetesTalosAPIAccess (enabled).
type KubeTalosAPIAccessConfig struct {
	AllowedRoles                []string `yaml:"allowedRoles,omitempty"`
	AllowedKubernetesNamespaces []string `yaml:"allowedKubernetesNamespaces,omitempty"`
}

// Kind implements Document.
func (*KubeTalosAPIAccessConfig) Kind() string { return "KubeTalosAPIAccessConfig" }

// check: the roles and namespaces are checked where they are folded.
func (k *KubeTalosAPIAccessConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())
}

func (k *KubeTalosAPIAccessConfig) fold(f *folding) {
	if w := f.writtenMachine().Features; w != nil && w.KubernetesTalosAPIAccess != nil {
		f.conflict("", "machine.features.kubernetesTalosAPIAccess", "Talos API access from Kubernetes")
	}

	f.features().KubernetesTalosAPIAccess = &KubernetesTalosAPIAccess{
		Enabled:                     ptr(true),
		AllowedRoles:                append([]string(nil), k.AllowedRoles...),
		AllowedKubernetesNamespaces: append([]string(nil), k.AllowedKubernetesNamespaces...),
	}
	f.alias("machine.features.kubernetesTalosAPIAccess", "")
	f.alias("machine.features.kubernetesTalosAPIAccess.allowedRoles", "allowedRoles")
	f.alias("machine.features.kubernetesTalosAPIAccess.allowedKubernetesNamespaces", "allowedKubernetesNamespaces")
}
