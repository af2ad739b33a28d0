package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const ethernetConfigDoc = `apiVersion: v1alpha1
kind: EthernetConfig
name: enp0s1
features:
  tx-checksum-ipv4: true
rings:
  rx: 16
channels:
  combined: 1
wakeOnLan:
  - unicast
  - multicast
`

const ethernetRefused = `talosbox does not implement EthernetConfig yet (ethtool features, rings, channels and wake-on-LAN): remove the document; the link keeps its driver's settings`

func TestEthernetConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "refused: no ethtool",
			docs: ethernetConfigDoc,
			errs: []string{`EthernetConfig["enp0s1"]: ` + ethernetRefused},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: EthernetConfig\nname: enp0s1\nrings:\n  rx_mini: 1\n",
			decodeErr: `unknown field "rx_mini" in EthernetConfig["enp0s1"].rings (did you mean "rx-mini"?)`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: EthernetConfig\nname: enp0s1\nfeatures:\n  tso: sometimes\n",
			decodeErr: `EthernetConfig["enp0s1"].features["tso"]: expected a boolean`,
		},
		{
			name: "Talos's rules too",
			docs: "apiVersion: v1alpha1\nkind: EthernetConfig\n",
			errs: []string{`EthernetConfig[""].name: name is required`, `EthernetConfig[""]: ` + ethernetRefused},
		},
	})
}

func TestEthernetConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, ethernetConfigDoc)

	checkNetDocPatch(t, ethernetConfigDoc, "apiVersion: v1alpha1\nkind: EthernetConfig\nname: enp0s1\nfeatures:\n  tx-tcp-segmentation: false\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := netDoc[*configs.EthernetConfig](t, cfg); len(d.Features) != 2 || d.Features["tx-tcp-segmentation"] {
				t.Errorf("after the strategic merge patch: %+v", d.Features)
			}
		})

	checkNetDocPatch(t, ethernetConfigDoc, `[{"op": "replace", "path": "/EthernetConfig/enp0s1/rings/rx", "value": 256}]`,
		func(t *testing.T, cfg *configs.Config) {
			if d := netDoc[*configs.EthernetConfig](t, cfg); *d.Rings.RX != 256 {
				t.Errorf("after the JSON patch: %+v", d.Rings)
			}
		})
}
