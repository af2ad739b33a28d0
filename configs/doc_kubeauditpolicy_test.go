package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeAuditPolicyConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into auditPolicy", doc: "kind: KubeAuditPolicyConfig\nconfiguration:\n  apiVersion: audit.k8s.io/v1\n  kind: Policy\n  rules:\n    - level: None\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				if r := cfg.Cluster.APIServer.AuditPolicy["rules"].([]any); r[0].(map[string]any)["level"] != "None" {
					t.Errorf("policy %v", cfg.Cluster.APIServer.AuditPolicy)
				}
			}},
		{name: "unknown field", doc: "kind: KubeAuditPolicyConfig\npolicy: {}\n", decodeErr: `unknown field "policy" in KubeAuditPolicyConfig`},
		{name: "wrong type", doc: "kind: KubeAuditPolicyConfig\nconfiguration: none\n", decodeErr: "KubeAuditPolicyConfig.configuration: expected a mapping"},
		{name: "bad level", doc: "kind: KubeAuditPolicyConfig\nconfiguration:\n  apiVersion: audit.k8s.io/v1\n  kind: Policy\n  rules:\n    - level: Everything\n",
			err: "KubeAuditPolicyConfig.configuration.rules[0].level:"},
		{name: "only on control planes", worker: true, doc: "kind: KubeAuditPolicyConfig\nconfiguration: {}\n",
			err: "document kind KubeAuditPolicyConfig is only allowed on control plane machines"},
		{name: "conflict", drop: []string{"KubeAPIServerConfig"},
			v1:  "cluster:\n  apiServer:\n    auditPolicy:\n      apiVersion: audit.k8s.io/v1\n      kind: Policy\n      rules:\n        - level: None\n",
			err: "KubeAuditPolicyConfig: the audit policy is already set in the v1alpha1 document (cluster.apiServer.auditPolicy)"},
	})

	runPatchCases(t, []patchCase{
		// The configuration is replaced by a strategic merge, as Talos marks it.
		{name: "strategic merge replaces", patch: "apiVersion: v1alpha1\nkind: KubeAuditPolicyConfig\nconfiguration:\n  apiVersion: audit.k8s.io/v1\n  kind: Policy\n  rules:\n    - level: None\n      namespaces: [kube-system]\n",
			check: func(t *testing.T, cfg *configs.Config) {
				if r := cfg.Cluster.APIServer.AuditPolicy["rules"].([]any); len(r) != 1 || r[0].(map[string]any)["level"] != "None" {
					t.Errorf("rules %v", r)
				}
			}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeAuditPolicyConfig/configuration/rules/0/level", "value": "Request"}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if r := cfg.Cluster.APIServer.AuditPolicy["rules"].([]any); r[0].(map[string]any)["level"] != "Request" {
					t.Errorf("rules %v", r)
				}
			}},
	})
}
