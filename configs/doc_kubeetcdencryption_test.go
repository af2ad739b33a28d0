package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeEtcdEncryptionConfig(t *testing.T) {
	const secret = "45yd2Ke+sytiICojDf8aibTfgt99nzJmO53cjDqrCto="

	doc := func(providers string) string {
		return "kind: KubeEtcdEncryptionConfig\nconfig:\n  resources:\n    - resources: [secrets]\n      providers:\n" + providers
	}

	runKubeCases(t, []kubeCase{
		{name: "read from the document, whole", doc: doc("        - aesgcm:\n            keys:\n              - name: k1\n                secret: " + secret + "\n        - identity: {}\n"),
			fold: func(t *testing.T, cfg *configs.Config) {
				enc := configs.EncryptionConfiguration(cfg)
				if enc["kind"] != "EncryptionConfiguration" || enc["apiVersion"] != "apiserver.config.k8s.io/v1" || len(enc["resources"].([]any)) != 1 {
					t.Errorf("encryption config %v", enc)
				}

				if cfg.Cluster.SecretboxEncryptionSecret != "" {
					t.Error("folded into the v1alpha1 secret")
				}
			}},
		{name: "kms", doc: doc("        - kms:\n            apiVersion: v2\n            name: vault\n            endpoint: unix:///run/kms.sock\n"),
			warn: "KubeEtcdEncryptionConfig.config.resources[0].providers[0].kms: the kms provider talks to a KMS plugin over a socket"},
		{name: "unknown field", doc: "kind: KubeEtcdEncryptionConfig\nconfiguration: {}\n", decodeErr: `unknown field "configuration" in KubeEtcdEncryptionConfig`},
		{name: "wrong type", doc: "kind: KubeEtcdEncryptionConfig\nconfig: []\n", decodeErr: "KubeEtcdEncryptionConfig.config: expected a mapping"},
		{name: "empty", doc: "kind: KubeEtcdEncryptionConfig\nconfig: {}\n", err: "KubeEtcdEncryptionConfig.config: etcd encryption config is required"},
		{name: "unknown top-level field", doc: "kind: KubeEtcdEncryptionConfig\nconfig:\n  resource: []\n",
			err: `KubeEtcdEncryptionConfig.config.resource: unknown field "resource" in the EncryptionConfiguration`},
		{name: "no providers", doc: doc("        []\n"), err: "KubeEtcdEncryptionConfig.config.resources[0].providers: providers must list at least one provider"},
		{name: "unknown provider", doc: doc("        - rot13: {}\n"), err: `KubeEtcdEncryptionConfig.config.resources[0].providers[0].rot13: unknown provider "rot13"`},
		// The message never quotes the secret.
		{name: "short key", doc: doc("        - secretbox:\n            keys:\n              - name: k\n                secret: c2hvcnQ=\n"),
			err: "KubeEtcdEncryptionConfig.config.resources[0].providers[0].secretbox.keys[0].secret: invalid secretbox key k: must be base64 of 32 bytes"},
		{name: "a resource twice", doc: doc("        - identity: {}\n    - resources: [secrets]\n      providers:\n        - identity: {}\n"),
			err: `KubeEtcdEncryptionConfig.config.resources[1].resources[0]: resource "secrets" is already listed at KubeEtcdEncryptionConfig.config.resources[0].resources[0]`},
		{name: "no keys", doc: doc("        - aescbc: {}\n"), err: "KubeEtcdEncryptionConfig.config.resources[0].providers[0].aescbc.keys: aescbc needs keys"},
		{name: "only on control planes", worker: true, doc: doc("        - identity: {}\n"),
			err: "KubeEtcdEncryptionConfig: document kind KubeEtcdEncryptionConfig is only allowed on control plane machines"},
		// A control plane without either says so.
		{name: "missing on a control plane", drop: []string{"KubeEtcdEncryptionConfig"},
			err: "cluster.secretboxEncryptionSecret: an encryption secret is required for controlplane nodes"},
		{name: "conflict", v1: "cluster:\n  secretboxEncryptionSecret: " + secret + "\n",
			err: "KubeEtcdEncryptionConfig: the etcd encryption config is already set in the v1alpha1 document (cluster.secretboxEncryptionSecret)"},
	})

	runPatchCases(t, []patchCase{
		// A strategic merge adds to the resources list, as in Talos.
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeEtcdEncryptionConfig\nconfig:\n  resources:\n    - resources: [configmaps]\n      providers:\n        - identity: {}\n",
			check: func(t *testing.T, cfg *configs.Config) {
				if resources := configs.EncryptionConfiguration(cfg)["resources"].([]any); len(resources) != 2 {
					t.Errorf("resources %v", resources)
				}
			}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeEtcdEncryptionConfig/config/resources/0/providers/-", "value": {"identity": {}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				providers := configs.EncryptionConfiguration(cfg)["resources"].([]any)[0].(map[string]any)["providers"].([]any)
				if len(providers) != 2 {
					t.Errorf("providers %v", providers)
				}
			}},
	})
}
