package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const kubeSpanConfigDoc = `apiVersion: v1alpha1
kind: KubeSpanConfig
enabled: false
advertiseKubernetesNetworks: false
allowDownPeerBypass: true
mtu: 1420
filters:
  endpoints:
    - 10.0.0.0/8
    - "!192.168.1.1"
  excludeAdvertisedNetworks:
    - 2007::/64
`

const kubeSpanRefused = `talosbox does not implement KubeSpan yet: set enabled: false (or remove the document); a WireguardConfig link does what KubeSpan would between the nodes`

func TestKubeSpanConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "off: accepted, folded into machine.network.kubespan",
			docs: kubeSpanConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				want := &configs.KubeSpan{AllowDownPeerBypass: true, MTU: 1420, Filters: &configs.KubeSpanFilters{
					Endpoints: []string{"10.0.0.0/8", "!192.168.1.1/32"}, ExcludeAdvertisedNetworks: []string{"2007::/64"}}}

				if got := cfg.Machine.Network.KubeSpan; !reflect.DeepEqual(got, want) {
					t.Errorf("kubespan = %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "enabled: refused",
			docs: "apiVersion: v1alpha1\nkind: KubeSpanConfig\nenabled: true\n",
			errs: []string{`KubeSpanConfig.enabled: ` + kubeSpanRefused},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: KubeSpanConfig\nenable: false\n",
			decodeErr: `unknown field "enable" in KubeSpanConfig (did you mean "enabled"?)`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: KubeSpanConfig\nmtu: large\n",
			decodeErr: `KubeSpanConfig.mtu:`,
		},
		{
			name: "Talos's rules",
			docs: "apiVersion: v1alpha1\nkind: KubeSpanConfig\nmtu: 1000\nfilters:\n  endpoints: [nope]\n  excludeAdvertisedNetworks: [10.0.0.0]\n",
			errs: []string{
				`KubeSpanConfig.filters.excludeAdvertisedNetworks[0]: invalid CIDR "10.0.0.0"`,
				`KubeSpanConfig.mtu: kubespan link MTU must be at least 1280, got 1000`,
				`KubeSpanConfig.filters.endpoints[0]: KubeSpan endpoint filter is not valid: "nope" (want a subnet or an address, optionally negated with !)`,
			},
		},
		{
			name: "machine.network.kubespan too",
			v1:   `machine: {network: {kubespan: {enabled: false}}}`,
			docs: "apiVersion: v1alpha1\nkind: KubeSpanConfig\nenabled: false\n",
			errs: []string{`KubeSpanConfig: kubespan is already configured in v1alpha1 machine.network.kubespan: configure it in one place`},
		},
	})
}

func TestKubeSpanConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, kubeSpanConfigDoc)

	checkNetDocPatch(t, kubeSpanConfigDoc, "apiVersion: v1alpha1\nkind: KubeSpanConfig\nmtu: 1380\n",
		func(t *testing.T, cfg *configs.Config) {
			if ks := cfg.Machine.Network.KubeSpan; ks.MTU != 1380 {
				t.Errorf("after the strategic merge patch: %+v", ks)
			}
		})

	checkNetDocPatch(t, kubeSpanConfigDoc, `[{"op": "replace", "path": "/KubeSpanConfig/enabled", "value": true}]`,
		func(t *testing.T, cfg *configs.Config) {
			if _, err := cfg.Validate(configs.ModeMetal); err == nil || problems(err)[0] != `KubeSpanConfig.enabled: `+kubeSpanRefused {
				t.Errorf("after the JSON patch that enables it: %v", err)
			}
		})
}
