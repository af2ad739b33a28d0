package configs_test

import (
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeAPIServerConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into cluster.apiServer and the port", doc: `kind: KubeAPIServerConfig
image: registry.k8s.io/kube-apiserver:v1.34.12
extraArgs:
  http2-max-streams-per-connection: "32"
env:
  HTTP_PROXY: http://proxy:3128
resources:
  requests:
    cpu: 500m
apiPort: 5443
certExtraSANs: [api.example.com]
startupProbes: false
`, fold: func(t *testing.T, cfg *configs.Config) {
			a := cfg.Cluster.APIServer
			switch {
			case a.Image != "registry.k8s.io/kube-apiserver:v1.34.12" || a.ExtraArgs["http2-max-streams-per-connection"] != "32" || a.Env["HTTP_PROXY"] == "":
				t.Errorf("apiServer %+v", a)
			case a.Resources == nil || a.Resources.Requests["cpu"] != "500m" || !slices.Equal(a.CertSANs, []string{"api.example.com"}):
				t.Errorf("resources %+v SANs %v", a.Resources, a.CertSANs)
			case cfg.LocalAPIServerPort() != 5443:
				t.Errorf("port %d", cfg.LocalAPIServerPort())
			case configs.DocumentOf[*configs.KubeAPIServerConfig](cfg).StartupProbesEnabled():
				t.Error("startupProbes: false")
			}
		}},
		// Talos's default: probes, which need the authentication config
		// to let anonymous requests reach /livez and /readyz.
		{name: "probes by default", fold: func(t *testing.T, cfg *configs.Config) {
			if !configs.DocumentOf[*configs.KubeAPIServerConfig](cfg).StartupProbesEnabled() || !configs.AnonymousHealthChecks(cfg) {
				t.Error("no probes by default")
			}
		}},
		{name: "probes without anonymous health checks", drop: []string{"KubeAuthenticationConfig"},
			warn: "KubeAPIServerConfig.startupProbes: the API server's probes are anonymous requests to /livez and /readyz"},
		{name: "unknown field", doc: "kind: KubeAPIServerConfig\nimage: x\ncertSANs: []\n", decodeErr: `unknown field "certSANs" in KubeAPIServerConfig`},
		{name: "wrong type", doc: "kind: KubeAPIServerConfig\nimage: x\napiPort: high\n", decodeErr: "KubeAPIServerConfig.apiPort:"},
		{name: "no image", doc: "kind: KubeAPIServerConfig\n", err: "KubeAPIServerConfig.image: kube-apiserver image cannot be empty"},
		{name: "bad image", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.20.5\n", err: "KubeAPIServerConfig.image: version of Kubernetes 1.20.5 is too old"},
		{name: "authentication flag", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nextraArgs:\n  oidc-issuer-url: https://idp\n",
			err: `KubeAPIServerConfig.extraArgs["oidc-issuer-url"]: kube-apiserver extra argument "oidc-issuer-url" is not allowed: use KubeAuthenticationConfig`},
		{name: "authorization flag", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nextraArgs:\n  authorization-mode: RBAC\n",
			err: `kube-apiserver extra argument "authorization-mode" is not allowed: use KubeAuthorizerConfig`},
		{name: "flag talosbox sets", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nextraArgs:\n  etcd-servers: https://x\n",
			err: `KubeAPIServerConfig.extraArgs["etcd-servers"]:`},
		{name: "bad resource", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nresources:\n  requests:\n    gpu: 1\n",
			err: `KubeAPIServerConfig.resources.requests["gpu"]: unsupported pod resource "gpu"`},
		{name: "bad port", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\napiPort: 70000\n", err: "KubeAPIServerConfig.apiPort:"},
		{name: "only on control planes", worker: true, doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nstartupProbes: false\n",
			err: "KubeAPIServerConfig: document kind KubeAPIServerConfig is only allowed on control plane machines"},
		{name: "conflict with cluster.apiServer", v1: "cluster:\n  apiServer:\n    image: registry.k8s.io/kube-apiserver:v1.34.12\n",
			drop: []string{"KubeAdmissionControlConfig", "KubeAuditPolicyConfig"},
			err:  "KubeAPIServerConfig: the kube-apiserver config is already set in the v1alpha1 document (cluster.apiServer)"},
		{name: "conflict with the port", v1: "cluster:\n  controlPlane:\n    localAPIServerPort: 7443\n",
			err: "KubeAPIServerConfig.apiPort: the kube-apiserver API port is already set in the v1alpha1 document (cluster.controlPlane.localAPIServerPort)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeAPIServerConfig\nextraArgs:\n  v: \"2\"\n", check: func(t *testing.T, cfg *configs.Config) {
			if a := cfg.Cluster.APIServer; a.ExtraArgs["v"] != "2" || a.Image != "registry.k8s.io/kube-apiserver:v1.34.12" {
				t.Errorf("apiServer %+v", a)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeAPIServerConfig/image", "value": "registry.k8s.io/kube-apiserver:v1.34.1"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.APIServer.Image != "registry.k8s.io/kube-apiserver:v1.34.1" {
				t.Errorf("image %q", cfg.Cluster.APIServer.Image)
			}
		}},
	})
}

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
