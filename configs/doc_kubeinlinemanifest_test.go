package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeInlineManifestConfig(t *testing.T) {
	const ns = "kind: KubeInlineManifestConfig\nname: namespace-ci\nmanifest: |\n  apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ci\n"

	runKubeCases(t, []kubeCase{
		{name: "after the v1alpha1 document's", doc: ns, v1: "cluster:\n  inlineManifests:\n    - name: first\n      contents: |\n        apiVersion: v1\n        kind: Namespace\n        metadata:\n          name: first\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				im := cfg.Cluster.InlineManifests
				if len(im) != 2 || im[0].Name != "first" || im[1].Name != "namespace-ci" {
					t.Errorf("inline manifests %+v", im)
				}
			}},
		{name: "on a worker", worker: true, doc: ns},
		{name: "unknown field", doc: "kind: KubeInlineManifestConfig\nname: a\ncontents: x\n", decodeErr: `unknown field "contents" in KubeInlineManifestConfig["a"]`},
		{name: "wrong type", doc: "kind: KubeInlineManifestConfig\nname: a\nmanifest: [x]\n", decodeErr: `KubeInlineManifestConfig["a"].manifest: expected a single value`},
		{name: "bad name", doc: "kind: KubeInlineManifestConfig\nname: CI\nmanifest: x\n", err: `KubeInlineManifestConfig["CI"].name: manifest name "CI" is invalid`},
		// A name the v1alpha1 document uses too is a duplicate there.
		{name: "duplicate name", doc: ns, v1: "cluster:\n  inlineManifests:\n    - name: namespace-ci\n      contents: |\n        apiVersion: v1\n        kind: Namespace\n        metadata:\n          name: x\n",
			err: `KubeInlineManifestConfig["namespace-ci"].name: inline manifest name "namespace-ci" is duplicate`},
		{name: "not a manifest", doc: "kind: KubeInlineManifestConfig\nname: a\nmanifest: \"::\"\n", err: `KubeInlineManifestConfig["a"].manifest:`},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\n" + ns, check: func(t *testing.T, cfg *configs.Config) {
			if len(cfg.Cluster.InlineManifests) != 1 {
				t.Errorf("%+v", cfg.Cluster.InlineManifests)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeInlineManifestConfig", "value": {"a": {"manifest": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if len(cfg.Cluster.InlineManifests) != 1 || cfg.Cluster.InlineManifests[0].Name != "a" {
					t.Errorf("%+v", cfg.Cluster.InlineManifests)
				}
			}},
	})
}
