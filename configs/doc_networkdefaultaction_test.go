package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const defaultActionDoc = "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\ningress: block\n"

func TestNetworkDefaultActionConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "block",
			docs: defaultActionDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				if !configs.DocumentOf[*configs.NetworkDefaultActionConfig](cfg).Block() {
					t.Error("not blocking")
				}
			},
		},
		{
			name: "accept, in capitals",
			docs: "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\ningress: Accept\n",
			effective: func(t *testing.T, cfg *configs.Config) {
				if configs.DocumentOf[*configs.NetworkDefaultActionConfig](cfg).Block() {
					t.Error("blocking")
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\negress: block\n",
			decodeErr: `unknown field "egress" in NetworkDefaultActionConfig (did you mean "ingress"?)`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\ningress: [block]\n",
			decodeErr: `NetworkDefaultActionConfig.ingress: expected a single value, got`,
		},
		{
			name: "Talos's values",
			docs: "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\ningress: reject\n",
			errs: []string{`NetworkDefaultActionConfig.ingress: invalid ingress default action "reject": want accept or block`},
		},
		{
			name: "missing",
			docs: "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\n",
			errs: []string{`NetworkDefaultActionConfig.ingress: ingress must be specified: accept or block`},
		},
	})
}

func TestNetworkDefaultActionConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, defaultActionDoc)

	checkNetDocPatch(t, defaultActionDoc, "apiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\ningress: accept\n",
		func(t *testing.T, cfg *configs.Config) {
			if netDoc[*configs.NetworkDefaultActionConfig](t, cfg).Block() {
				t.Error("still blocking after the strategic merge patch")
			}
		})

	checkNetDocPatch(t, defaultActionDoc, `[{"op": "remove", "path": "/NetworkDefaultActionConfig"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if configs.DocumentOf[*configs.NetworkDefaultActionConfig](cfg) != nil {
				t.Error("the document is still there after the JSON patch")
			}
		})
}
