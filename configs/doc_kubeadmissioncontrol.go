package configs

// KubeAdmissionControlConfig is Talos's KubeAdmissionControlConfig: the
// configuration of one admission plugin, named by the plugin
// (PodSecurity), an entry of cluster.apiServer.admissionControl.
type KubeAdmissionControlConfig struct {
	Name          string       `yaml:"name"`
	Configuration Unstructured `yaml:"configuration"`
}

// Kind implements Document.
func (*KubeAdmissionControlConfig) Kind() string { return "KubeAdmissionControlConfig" }

// DocumentName implements NamedDocument.
func (k *KubeAdmissionControlConfig) DocumentName() string { return k.Name }

// check: the configuration is checked where it is folded (PodSecurity's
// against its schema).
func (k *KubeAdmissionControlConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if k.Name == "" {
		v.errorf(path+".name", "admission control plugin name is required (e.g. PodSecurity)")
	}
}

func (k *KubeAdmissionControlConfig) fold(f *folding) {
	if w := f.writtenCluster().APIServer; w != nil && len(w.AdmissionControl) > 0 {
		f.conflict("", "cluster.apiServer.admissionControl", "admission control plugin config")
	}

	a := f.apiServer()
	i := len(a.AdmissionControl)
	a.AdmissionControl = append(a.AdmissionControl, AdmissionPluginConfig{Name: k.Name, Configuration: cloneUnstructured(k.Configuration)})
	f.alias(indexPath("cluster.apiServer.admissionControl", i), "")
}
