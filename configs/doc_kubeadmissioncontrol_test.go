package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeAdmissionControlConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "an entry of admissionControl per document", doc: "kind: KubeAdmissionControlConfig\nname: EventRateLimit\nconfiguration:\n  apiVersion: eventratelimit.admission.k8s.io/v1alpha1\n  kind: Configuration\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				ac := cfg.Cluster.APIServer.AdmissionControl
				if len(ac) != 2 || ac[0].Name != "PodSecurity" || ac[1].Name != "EventRateLimit" {
					t.Errorf("admission %+v", ac)
				}
			}},
		{name: "unknown field", doc: "kind: KubeAdmissionControlConfig\nname: X\nconfig: {}\n", decodeErr: `unknown field "config" in KubeAdmissionControlConfig["X"]`},
		{name: "wrong type", doc: "kind: KubeAdmissionControlConfig\nname: X\nconfiguration: []\n", decodeErr: `KubeAdmissionControlConfig["X"].configuration: expected a mapping`},
		{name: "no name", doc: "kind: KubeAdmissionControlConfig\nconfiguration: {}\n", err: `KubeAdmissionControlConfig[""].name: admission control plugin name is required`},
		// PodSecurity's configuration is checked as it is in v1alpha1.
		{name: "bad PodSecurity level", doc: "kind: KubeAdmissionControlConfig\nname: PodSecurity\nconfiguration:\n  apiVersion: pod-security.admission.config.k8s.io/v1\n  kind: PodSecurityConfiguration\n  defaults:\n    enforce: strict\n",
			err: `KubeAdmissionControlConfig["PodSecurity"].configuration.defaults.enforce:`},
		{name: "only on control planes", worker: true, doc: "kind: KubeAdmissionControlConfig\nname: X\nconfiguration: {}\n",
			err: "document kind KubeAdmissionControlConfig is only allowed on control plane machines"},
		{name: "conflict", drop: []string{"KubeAPIServerConfig"},
			v1:  "cluster:\n  apiServer:\n    admissionControl:\n      - name: PodSecurity\n        configuration: {}\n",
			err: `KubeAdmissionControlConfig["PodSecurity"]: admission control plugin config is already set in the v1alpha1 document (cluster.apiServer.admissionControl)`},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge by name", patch: "apiVersion: v1alpha1\nkind: KubeAdmissionControlConfig\nname: PodSecurity\nconfiguration:\n  defaults:\n    enforce: restricted\n",
			check: func(t *testing.T, cfg *configs.Config) {
				d := cfg.Cluster.APIServer.AdmissionControl[0].Configuration["defaults"].(map[string]any)
				if d["enforce"] != "restricted" || d["audit"] != "restricted" {
					t.Errorf("defaults %v", d)
				}
			}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeAdmissionControlConfig/PodSecurity/configuration/defaults/enforce", "value": "privileged"}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if d := cfg.Cluster.APIServer.AdmissionControl[0].Configuration["defaults"].(map[string]any); d["enforce"] != "privileged" {
					t.Errorf("defaults %v", d)
				}
			}},
	})
}
