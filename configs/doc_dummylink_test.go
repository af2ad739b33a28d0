package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const dummyLinkConfigDoc = `apiVersion: v1alpha1
kind: DummyLinkConfig
name: dummy1
hardwareAddr: 2e:3c:4d:5e:6f:70
up: true
addresses:
  - address: 192.168.1.100/32
`

func TestDummyLinkConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into machine.network's dummy",
			docs: dummyLinkConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				if d := iface(t, cfg, "dummy1"); !d.Dummy || !reflect.DeepEqual(d.Addresses, []string{"192.168.1.100/32"}) {
					t.Errorf("dummy1: %+v", d)
				}

				if d := netDoc[*configs.DummyLinkConfig](t, cfg); d.LinkHardwareAddr() != "2e:3c:4d:5e:6f:70" {
					t.Errorf("document: %+v", d)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: DummyLinkConfig\nname: dummy1\nmac: 2e:3c:4d:5e:6f:70\n",
			decodeErr: `unknown field "mac" in DummyLinkConfig["dummy1"]`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: DummyLinkConfig\nname: dummy1\nup: maybe\n",
			decodeErr: `DummyLinkConfig["dummy1"].up:`,
		},
		{
			name: "bad name and MAC",
			docs: "apiVersion: v1alpha1\nkind: DummyLinkConfig\nname: a-name-far-too-long\nhardwareAddr: 2e:3c:4d\n",
			errs: []string{
				`DummyLinkConfig["a-name-far-too-long"].name: invalid link name "a-name-far-too-long": a link name has at most 15 characters, without '/', ':' or white space`,
				`DummyLinkConfig["a-name-far-too-long"].hardwareAddr: invalid MAC address "2e:3c:4d": want six colon-separated hex bytes (2e:3c:4d:5e:6f:70)`,
			},
		},
		{
			name: "already a bond in machine.network",
			v1:   `machine: {network: {interfaces: [{interface: dummy1, bond: {mode: active-backup, interfaces: [eth0]}}]}}`,
			docs: "apiVersion: v1alpha1\nkind: DummyLinkConfig\nname: dummy1\n",
			errs: []string{
				`DummyLinkConfig["dummy1"]: link "dummy1" is already a bond link in the v1alpha1 document (machine.network.interfaces[0].bond): a dummy link is declared in one place; remove one of them`,
			},
		},
	})
}

func TestDummyLinkConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, dummyLinkConfigDoc)

	checkNetDocPatch(t, dummyLinkConfigDoc, "apiVersion: v1alpha1\nkind: DummyLinkConfig\nname: dummy1\naddresses:\n  - address: 192.168.1.101/32\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := iface(t, cfg, "dummy1"); len(d.Addresses) != 2 {
				t.Errorf("after the strategic merge patch: %+v", d)
			}
		})

	checkNetDocPatch(t, dummyLinkConfigDoc, `[{"op": "remove", "path": "/DummyLinkConfig/dummy1/hardwareAddr"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if d := netDoc[*configs.DummyLinkConfig](t, cfg); d.HardwareAddr != "" {
				t.Errorf("after the JSON patch: %+v", d)
			}
		})
}
