package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeExternalManifestConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		// Read from the documents, each with its own headers, after
		// cluster.extraManifests.
		{name: "with its headers", doc: "kind: KubeExternalManifestConfig\nname: cilium\nurl: https://example.com/cilium.yaml\nheaders:\n  Authorization: Bearer x\n",
			v1: "cluster:\n  extraManifests: [https://example.com/a.yaml]\n  extraManifestHeaders:\n    X-A: a\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				got := configs.ExternalManifests(cfg)
				if len(got) != 2 || got[0].ID != "99-https://example.com/a.yaml" || got[0].Headers["X-A"] != "a" ||
					got[1].ID != "99-cilium" || got[1].URL != "https://example.com/cilium.yaml" || got[1].Headers["Authorization"] != "Bearer x" || got[1].Headers["X-A"] != "" {
					t.Errorf("manifests %+v", got)
				}
			}},
		{name: "on a worker", worker: true, doc: "kind: KubeExternalManifestConfig\nname: a\nurl: https://example.com/a.yaml\n"},
		{name: "unknown field", doc: "kind: KubeExternalManifestConfig\nname: a\nurls: []\n", decodeErr: `unknown field "urls" in KubeExternalManifestConfig["a"] (did you mean "url"?)`},
		{name: "wrong type", doc: "kind: KubeExternalManifestConfig\nname: a\nurl: https://x\nheaders: [a]\n", decodeErr: `KubeExternalManifestConfig["a"].headers: expected a mapping`},
		{name: "bad name", doc: "kind: KubeExternalManifestConfig\nname: Custom_CNI\nurl: https://example.com/a.yaml\n",
			err: `KubeExternalManifestConfig["Custom_CNI"].name: manifest name "Custom_CNI" is invalid: a lowercase RFC 1123 subdomain`},
		{name: "no URL", doc: "kind: KubeExternalManifestConfig\nname: a\n", err: `KubeExternalManifestConfig["a"].url: manifest URL is required`},
		{name: "ftp", doc: "kind: KubeExternalManifestConfig\nname: a\nurl: ftp://example.com/a.yaml\n", err: `KubeExternalManifestConfig["a"].url: invalid manifest URL "ftp://example.com/a.yaml": scheme must be http or https`},
		{name: "bad header", doc: "kind: KubeExternalManifestConfig\nname: a\nurl: https://example.com/a.yaml\nheaders:\n  \"X A\": b\n", err: `KubeExternalManifestConfig["a"].headers["X A"]: invalid HTTP header name`},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge adds one", patch: "apiVersion: v1alpha1\nkind: KubeExternalManifestConfig\nname: cni\nurl: https://example.com/cni.yaml\n", check: func(t *testing.T, cfg *configs.Config) {
			if got := configs.ExternalManifests(cfg); len(got) != 1 || got[0].ID != "99-cni" {
				t.Errorf("%+v", got)
			}
		}},
		{name: "JSON patch adds one", patch: `[{"op": "add", "path": "/KubeExternalManifestConfig", "value": {"cni": {"url": "https://example.com/cni.yaml"}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if got := configs.ExternalManifests(cfg); len(got) != 1 || got[0].URL != "https://example.com/cni.yaml" {
					t.Errorf("%+v", got)
				}
			}},
	})
}
