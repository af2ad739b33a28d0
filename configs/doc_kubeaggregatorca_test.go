package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeAggregatorCAConfig(t *testing.T) {
	cert, key := pemOf(t, "KubeAggregatorCAConfig", "cert"), pemOf(t, "KubeAggregatorCAConfig", "key")
	other := pemOf(t, "KubeAPIServerCAConfig", "cert")

	runKubeCases(t, []kubeCase{
		{name: "issuing CA folds, accepted CAs are read from the document",
			doc: "kind: KubeAggregatorCAConfig\nissuingCA:\n  cert: " + indentPEM(cert, 4) + "  key: " + indentPEM(key, 4) + "acceptedCAs:\n  - " + indentPEM(other, 4),
			fold: func(t *testing.T, cfg *configs.Config) {
				if a := cfg.Cluster.AggregatorCA; string(a.Crt) != cert || string(a.Key) != key {
					t.Error("aggregatorCA is not the document's")
				}

				if got := configs.AggregatorAcceptedCAs(cfg); len(got) != 1 || string(got[0]) != other {
					t.Errorf("accepted %q", got)
				}
			}},
		{name: "unknown field", doc: "kind: KubeAggregatorCAConfig\nissuingCa: {}\n", decodeErr: `unknown field "issuingCa" in KubeAggregatorCAConfig (did you mean "issuingCA"?)`},
		{name: "wrong type", doc: "kind: KubeAggregatorCAConfig\nissuingCA: x\n", decodeErr: "KubeAggregatorCAConfig.issuingCA: expected a mapping"},
		{name: "no issuing CA", doc: "kind: KubeAggregatorCAConfig\nacceptedCAs:\n  - " + indentPEM(other, 4),
			err: "KubeAggregatorCAConfig.issuingCA: issuing CA is not set"},
		{name: "bad accepted CA", doc: "kind: KubeAggregatorCAConfig\nissuingCA:\n  cert: " + indentPEM(cert, 4) + "  key: " + indentPEM(key, 4) + "acceptedCAs: [nope]\n",
			err: "KubeAggregatorCAConfig.acceptedCAs[0]: accepted CA #0: no PEM blocks found"},
		{name: "only on control planes", worker: true, doc: "kind: KubeAggregatorCAConfig\nissuingCA:\n  cert: " + indentPEM(cert, 4) + "  key: " + indentPEM(key, 4),
			err: "KubeAggregatorCAConfig: document kind KubeAggregatorCAConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "cluster:\n  aggregatorCA:\n    crt: " + b64(cert) + "\n",
			err: "KubeAggregatorCAConfig: the aggregator CA is already set in the v1alpha1 document (cluster.aggregatorCA)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeAggregatorCAConfig\nacceptedCAs:\n  - " + indentPEM(other, 4), check: func(t *testing.T, cfg *configs.Config) {
			if len(configs.AggregatorAcceptedCAs(cfg)) != 1 {
				t.Error("no accepted CA")
			}
		}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeAggregatorCAConfig/acceptedCAs", "value": [` + jsonString(other) + `]}]`, check: func(t *testing.T, cfg *configs.Config) {
			if len(configs.AggregatorAcceptedCAs(cfg)) != 1 {
				t.Error("no accepted CA")
			}
		}},
	})
}
