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

func TestKubeAuthorizerConfig(t *testing.T) {
	const webhook = `kind: KubeAuthorizerConfig
name: in-cluster
type: Webhook
webhook:
  timeout: 3s
  subjectAccessReviewVersion: v1
  matchConditionSubjectAccessReviewVersion: v1
  failurePolicy: NoOpinion
  connectionInfo:
    type: InClusterConfig
`

	runKubeCases(t, []kubeCase{
		// With a KubeAPIServerConfig the chain is the documents', in order.
		{name: "the chain, in order", doc: webhook, fold: func(t *testing.T, cfg *configs.Config) {
			got := configs.Authorizers(cfg)
			if len(got) != 3 || got[0].Type != "Node" || got[1].Type != "RBAC" || got[2].Name != "in-cluster" || got[2].Webhook["failurePolicy"] != "NoOpinion" {
				t.Errorf("authorizers %+v", got)
			}
		}},
		{name: "RBAC alone", drop: []string{"KubeAuthorizerConfig"}, doc: "kind: KubeAuthorizerConfig\nname: rbac\ntype: RBAC\n", fold: func(t *testing.T, cfg *configs.Config) {
			if got := configs.Authorizers(cfg); len(got) != 1 || got[0].Type != "RBAC" {
				t.Errorf("authorizers %+v", got)
			}
		}},
		// With the v1alpha1 API server, Node and RBAC come first (Talos's legacy path).
		{name: "v1alpha1 API server", drop: []string{"KubeAPIServerConfig", "KubeAuthorizerConfig", "KubeAdmissionControlConfig", "KubeAuditPolicyConfig", "KubeAuthenticationConfig"},
			v1: "cluster:\n  apiServer:\n    image: registry.k8s.io/kube-apiserver:v1.34.12\n", doc: webhook, fold: func(t *testing.T, cfg *configs.Config) {
				got := configs.Authorizers(cfg)
				if len(got) != 3 || got[0].Type != "Node" || got[1].Type != "RBAC" || got[2].Type != "Webhook" {
					t.Errorf("authorizers %+v", got)
				}
			}},
		{name: "unknown field", doc: "kind: KubeAuthorizerConfig\nname: x\ntype: RBAC\nmode: x\n", decodeErr: `unknown field "mode" in KubeAuthorizerConfig["x"]`},
		{name: "wrong type", doc: "kind: KubeAuthorizerConfig\nname: x\ntype: [RBAC]\n", decodeErr: `KubeAuthorizerConfig["x"].type: expected a single value`},
		{name: "no type", doc: "kind: KubeAuthorizerConfig\nname: x\n", err: `KubeAuthorizerConfig["x"].type: authorizer type is required`},
		{name: "unknown type", doc: "kind: KubeAuthorizerConfig\nname: x\ntype: ABAC\n", err: "authorizer type ABAC is not allowed, allowed types are [Node RBAC Webhook]"},
		{name: "webhook without its config", doc: "kind: KubeAuthorizerConfig\nname: x\ntype: Webhook\n", err: "authorizer webhook configuration is required for Webhook authorizer type"},
		{name: "webhook config on RBAC", doc: "kind: KubeAuthorizerConfig\nname: rbac\ntype: RBAC\nwebhook:\n  timeout: 3s\n",
			warn: "authorizer webhook configuration is not allowed non-Webhook authorizer types"},
		{name: "RBAC twice", doc: "kind: KubeAuthorizerConfig\nname: rbac2\ntype: RBAC\n",
			err: `KubeAuthorizerConfig["rbac2"].type: authorizer type RBAC is already used by KubeAuthorizerConfig "rbac"`},
		{name: "only on control planes", worker: true, doc: "kind: KubeAuthorizerConfig\nname: rbac\ntype: RBAC\n",
			err: "document kind KubeAuthorizerConfig is only allowed on control plane machines"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge adds one", patch: "apiVersion: v1alpha1\n" + webhook, check: func(t *testing.T, cfg *configs.Config) {
			if got := configs.Authorizers(cfg); len(got) != 3 {
				t.Errorf("authorizers %+v", got)
			}
		}},
		{name: "JSON patch removes one", patch: `[{"op": "remove", "path": "/KubeAuthorizerConfig/node"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if got := configs.Authorizers(cfg); len(got) != 1 || got[0].Name != "rbac" {
				t.Errorf("authorizers %+v", got)
			}
		}},
	})
}
