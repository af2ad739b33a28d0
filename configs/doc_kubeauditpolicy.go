package configs

// KubeAuditPolicyConfig is Talos's KubeAuditPolicyConfig: the API
// server's audit policy, cluster.apiServer.auditPolicy. Without one (or
// with an empty configuration) the policy is Talos's default: Metadata
// for everything.
type KubeAuditPolicyConfig struct {
	Configuration Unstructured `yaml:"configuration" merge:"replace"`
}

// Kind implements Document.
func (*KubeAuditPolicyConfig) Kind() string { return "KubeAuditPolicyConfig" }

// check: the policy is checked where it is folded.
func (k *KubeAuditPolicyConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())
}

func (k *KubeAuditPolicyConfig) fold(f *folding) {
	if w := f.writtenCluster().APIServer; w != nil && len(w.AuditPolicy) > 0 {
		f.conflict("", "cluster.apiServer.auditPolicy", "the audit policy")
	}

	f.apiServer().AuditPolicy = cloneUnstructured(k.Configuration)
	f.alias("cluster.apiServer.auditPolicy", "configuration")
}
