package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeCredentialProviderConfig(t *testing.T) {
	const doc = `kind: KubeCredentialProviderConfig
configuration:
  apiVersion: kubelet.config.k8s.io/v1
  kind: CredentialProviderConfig
  providers:
    - name: ecr-credential-provider
      apiVersion: credentialprovider.kubelet.k8s.io/v1
      matchImages: ["*.dkr.ecr.*.amazonaws.com"]
      defaultCacheDuration: 12h
`

	// talosbox nodes carry no credential provider plugins: as with
	// machine.kubelet.credentialProviderConfig, a warning says so.
	const noPlugins = "has no effect: talosbox nodes carry no image credential provider plugins"

	runKubeCases(t, []kubeCase{
		{name: "folds into credentialProviderConfig", doc: doc, warn: noPlugins, fold: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Kubelet.CredentialProviderConfig["kind"] != "CredentialProviderConfig" {
				t.Errorf("credential providers %v", cfg.Machine.Kubelet.CredentialProviderConfig)
			}
		}},
		{name: "on a worker", worker: true, doc: doc, warn: noPlugins},
		{name: "unknown field", doc: doc + "providers: []\n", decodeErr: `unknown field "providers" in KubeCredentialProviderConfig`},
		{name: "wrong type", doc: "kind: KubeCredentialProviderConfig\nconfiguration: yes\n", decodeErr: "KubeCredentialProviderConfig.configuration: expected a mapping"},
		{name: "conflict with the legacy kubelet", doc: doc, drop: []string{"KubeletConfig", "KubeNodeConfig"},
			v1: "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.34.12\n", warn: noPlugins,
			err: "KubeCredentialProviderConfig: the kubelet's credential provider config (a KubeCredentialProviderConfig with the legacy kubelet configuration) is already set in the v1alpha1 document (machine.kubelet)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge adds it", patch: "apiVersion: v1alpha1\n" + doc, check: func(t *testing.T, cfg *configs.Config) {
			if len(cfg.Machine.Kubelet.CredentialProviderConfig) == 0 {
				t.Error("not added")
			}
		}},
		{name: "JSON patch adds it", patch: `[{"op": "add", "path": "/KubeCredentialProviderConfig", "value": {"configuration": {"kind": "CredentialProviderConfig", "apiVersion": "kubelet.config.k8s.io/v1", "providers": []}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if cfg.Machine.Kubelet.CredentialProviderConfig["kind"] != "CredentialProviderConfig" {
					t.Errorf("credential providers %v", cfg.Machine.Kubelet.CredentialProviderConfig)
				}
			}},
	})
}
