package generate

import "github.com/talosbox/talosbox/configs"

// defaultAdmissionControl enforces the baseline Pod Security Standard and
// audits/warns at restricted, exempting kube-system, as Talos generates it.
func defaultAdmissionControl() []configs.AdmissionPluginConfig {
	return []configs.AdmissionPluginConfig{{
		Name: "PodSecurity",
		Configuration: configs.Unstructured{
			"apiVersion": "pod-security.admission.config.k8s.io/v1alpha1",
			"kind":       "PodSecurityConfiguration",
			"defaults": map[string]any{
				"audit":           "restricted",
				"audit-version":   "latest",
				"enforce":         "baseline",
				"enforce-version": "latest",
				"warn":            "restricted",
				"warn-version":    "latest",
			},
			"exemptions": map[string]any{
				"namespaces":     []any{"kube-system"},
				"runtimeClasses": []any{},
				"usernames":      []any{},
			},
		},
	}}
}

// defaultAuditPolicy logs request metadata for everything, the Talos default.
func defaultAuditPolicy() configs.Unstructured {
	return configs.Unstructured{
		"apiVersion": "audit.k8s.io/v1",
		"kind":       "Policy",
		"rules": []any{
			map[string]any{"level": "Metadata"},
		},
	}
}
