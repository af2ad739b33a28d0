package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const bridgeConfigDoc = `apiVersion: v1alpha1
kind: BridgeConfig
name: bridge.1
hardwareAddr: 02:00:00:00:0b:01
links:
  - eno1
  - eno5
stp:
  enabled: false
vlan:
  filtering: true
up: true
addresses:
  - address: 1.2.3.5/32
`

func TestBridgeConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into machine.network's bridge",
			docs: bridgeConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				d := iface(t, cfg, "bridge.1")
				want := &configs.Bridge{Interfaces: []string{"eno1", "eno5"}, VLAN: &configs.BridgeVLAN{FilteringEnabled: true}}

				if !reflect.DeepEqual(d.Bridge, want) || !reflect.DeepEqual(d.Addresses, []string{"1.2.3.5/32"}) {
					t.Errorf("bridge.1: %+v, bridge %+v", d, d.Bridge)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: BridgeConfig\nname: br0\nstp:\n  on: true\n",
			decodeErr: `unknown field "on" in BridgeConfig["br0"].stp`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: BridgeConfig\nname: br0\nvlan:\n  filtering: sometimes\n",
			decodeErr: `BridgeConfig["br0"].vlan.filtering:`,
		},
		{
			name: "STP",
			docs: "apiVersion: v1alpha1\nkind: BridgeConfig\nname: br0\nlinks: [eth0]\nstp:\n  enabled: true\n",
			errs: []string{`BridgeConfig["br0"].stp.enabled: talosbox does not implement the spanning tree protocol on bridges yet: remove stp.enabled (the bridge then forwards without STP, as with enabled: false)`},
		},
		{
			name: "no name",
			docs: "apiVersion: v1alpha1\nkind: BridgeConfig\nlinks: [eth0]\n",
			errs: []string{`BridgeConfig[""].name: name must be specified: the link's name (eth0, enp0s3)`},
		},
		{
			name: "a port that is also a bond's member",
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth0]\n---\n" +
				"apiVersion: v1alpha1\nkind: BridgeConfig\nname: br0\nlinks: [eth0]\n",
			errs: []string{`BridgeConfig["br0"].links[0]: interface "eth0" is declared as part of two separate links`},
		},
		{
			name: "already a dummy in machine.network",
			v1:   `machine: {network: {interfaces: [{interface: br0, dummy: true}]}}`,
			docs: "apiVersion: v1alpha1\nkind: BridgeConfig\nname: br0\nlinks: [eth0]\n",
			errs: []string{`BridgeConfig["br0"]: link "br0" is already a dummy link in the v1alpha1 document (machine.network.interfaces[0].dummy): a bridge link is declared in one place; remove one of them`},
		},
	})
}

func TestBridgeConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, bridgeConfigDoc)

	checkNetDocPatch(t, bridgeConfigDoc, "apiVersion: v1alpha1\nkind: BridgeConfig\nname: bridge.1\nlinks: [eno6]\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := iface(t, cfg, "bridge.1"); !reflect.DeepEqual(d.Bridge.Interfaces, []string{"eno1", "eno5", "eno6"}) {
				t.Errorf("after the strategic merge patch: %+v", d.Bridge)
			}
		})

	checkNetDocPatch(t, bridgeConfigDoc, `[{"op": "replace", "path": "/BridgeConfig/bridge.1/vlan/filtering", "value": false}]`,
		func(t *testing.T, cfg *configs.Config) {
			if d := iface(t, cfg, "bridge.1"); d.Bridge.VLAN == nil || d.Bridge.VLAN.FilteringEnabled {
				t.Errorf("after the JSON patch: %+v", d.Bridge)
			}
		})
}
