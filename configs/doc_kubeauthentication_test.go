package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeAuthenticationConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "read from the document", doc: `kind: KubeAuthenticationConfig
configuration:
  anonymous:
    enabled: false
  jwt:
    - issuer:
        url: https://idp.example.com
        audiences: [kubernetes]
      claimMappings:
        username:
          claim: sub
          prefix: ""
`, warn: "the API server's probes are anonymous requests", fold: func(t *testing.T, cfg *configs.Config) {
			a := configs.AuthenticationConfiguration(cfg)
			if a["kind"] != "AuthenticationConfiguration" || a["apiVersion"] != "apiserver.config.k8s.io/v1beta1" || len(a["jwt"].([]any)) != 1 {
				t.Errorf("authentication %v", a)
			}

			if configs.AnonymousHealthChecks(cfg) {
				t.Error("anonymous is off")
			}
		}},
		{name: "unknown field", doc: "kind: KubeAuthenticationConfig\nconfig: {}\n", decodeErr: `unknown field "config" in KubeAuthenticationConfig`},
		{name: "wrong type", doc: "kind: KubeAuthenticationConfig\nconfiguration: []\n", decodeErr: "KubeAuthenticationConfig.configuration: expected a mapping"},
		{name: "unknown configuration field", doc: "kind: KubeAuthenticationConfig\nconfiguration:\n  anonymous:\n    enabled: true\n  oidc: []\n",
			err: `KubeAuthenticationConfig.configuration.oidc: unknown field "oidc"`},
		{name: "anonymous not a bool", doc: "kind: KubeAuthenticationConfig\nconfiguration:\n  anonymous:\n    enabled: yes please\n",
			warn: "the API server's probes are anonymous requests", err: "KubeAuthenticationConfig.configuration.anonymous.enabled: enabled must be true or false"},
		{name: "JWT without an issuer", doc: "kind: KubeAuthenticationConfig\nconfiguration:\n  jwt:\n    - claimMappings: {}\n",
			warn: "the API server's probes are anonymous requests", err: "KubeAuthenticationConfig.configuration.jwt[0].issuer.url: a JWT authenticator needs issuer.url"},
		// The flags the file replaces are refused next to it.
		{name: "with the v1alpha1 API server's anonymous-auth", drop: []string{"KubeAPIServerConfig", "KubeAdmissionControlConfig", "KubeAuditPolicyConfig"},
			v1:  "cluster:\n  apiServer:\n    image: registry.k8s.io/kube-apiserver:v1.34.12\n    extraArgs:\n      anonymous-auth: \"true\"\n",
			err: `cluster.apiServer.extraArgs["anonymous-auth"]: kube-apiserver extra argument "anonymous-auth" cannot be used with a KubeAuthenticationConfig`},
		{name: "only on control planes", worker: true, doc: "kind: KubeAuthenticationConfig\nconfiguration: {}\n",
			err: "document kind KubeAuthenticationConfig is only allowed on control plane machines"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge replaces the configuration", patch: "apiVersion: v1alpha1\nkind: KubeAuthenticationConfig\nconfiguration:\n  anonymous:\n    enabled: true\n",
			check: func(t *testing.T, cfg *configs.Config) {
				a := configs.AuthenticationConfiguration(cfg)
				if _, ok := a["jwt"]; ok || !configs.AnonymousHealthChecks(cfg) {
					t.Errorf("authentication %v", a)
				}
			}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeAuthenticationConfig/configuration/anonymous/enabled", "value": false}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if configs.AnonymousHealthChecks(cfg) {
					t.Error("anonymous still on")
				}
			}},
	})
}
