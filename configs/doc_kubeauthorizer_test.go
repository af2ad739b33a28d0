package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

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
