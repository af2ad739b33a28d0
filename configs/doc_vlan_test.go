package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const vlanConfigDoc = `apiVersion: v1alpha1
kind: VLANConfig
name: enp0s3.2
vlanID: 2
vlanMode: 802.1q
parent: enp0s3
up: true
mtu: 1400
addresses:
  - address: 192.168.1.100/32
routes:
  - destination: 192.168.0.0/16
    gateway: 192.168.1.1
`

func TestVLANConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into its parent's VLANs",
			docs: vlanConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				want := []configs.VLAN{{ID: 2, MTU: 1400, Addresses: []string{"192.168.1.100/32"},
					Routes: []configs.Route{{Network: "192.168.0.0/16", Gateway: "192.168.1.1"}}}}

				if v := iface(t, cfg, "enp0s3").VLANs; !reflect.DeepEqual(v, want) {
					t.Errorf("enp0s3's VLANs:\ngot  %+v\nwant %+v", v, want)
				}

				if n := configs.VLANLinkName(cfg, "enp0s3", 2); n != "enp0s3.2" {
					t.Errorf("link name %q", n)
				}
			},
		},
		{
			// networkd names the link after the document; a DHCPv4Config
			// for it lands on the same VLAN, whatever the order.
			name: "a name of its own",
			docs: "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: office\n---\n" +
				"apiVersion: v1alpha1\nkind: VLANConfig\nname: office\nvlanID: 7\nvlanMode: 802.1AD\nparent: eth0\n",
			effective: func(t *testing.T, cfg *configs.Config) {
				if v := iface(t, cfg, "eth0").VLANs; len(v) != 1 || v[0].ID != 7 || !v[0].DHCP {
					t.Errorf("eth0's VLANs: %+v", v)
				}

				if n := configs.VLANLinkName(cfg, "eth0", 7); n != "office" {
					t.Errorf("link name %q, want office", n)
				}

				if p := netDoc[*configs.VLANConfig](t, cfg).Protocol(); p != "802.1ad" {
					t.Errorf("protocol %q", p)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: VLANConfig\nname: v5\nvlanId: 5\nparent: eth0\n",
			decodeErr: `unknown field "vlanId" in VLANConfig["v5"] (did you mean "vlanID"?)`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: VLANConfig\nname: v5\nvlanID: 70000\nparent: eth0\n",
			decodeErr: `VLANConfig["v5"].vlanID:`,
		},
		{
			name: "Talos's rules",
			docs: "apiVersion: v1alpha1\nkind: VLANConfig\nname: v5\nvlanMode: qinq\n---\napiVersion: v1alpha1\nkind: VLANConfig\nname: v6\nvlanID: 4095\nparent: v6\n",
			errs: []string{
				`VLANConfig["v5"].vlanID: vlanID must be specified and between 1 and 4094, got 0`,
				`VLANConfig["v5"].parent: parent must be specified: the link the VLAN is tagged on (eth0)`,
				`VLANConfig["v5"].vlanMode: vlanMode must be either '802.1q' or '802.1ad', got "qinq"`,
				`VLANConfig["v6"].vlanID: vlanID must be specified and between 1 and 4094, got 4095`,
				`VLANConfig["v6"].parent: a VLAN link cannot be its own parent ("v6")`,
			},
		},
		{
			name: "declared twice",
			docs: "apiVersion: v1alpha1\nkind: VLANConfig\nname: a\nvlanID: 5\nparent: eth0\n---\napiVersion: v1alpha1\nkind: VLANConfig\nname: b\nvlanID: 5\nparent: eth0\n",
			errs: []string{`VLANConfig["b"].vlanID: VLAN 5 on "eth0" is already configured by VLANConfig "a"`},
		},
		{
			name: "declared in machine.network too",
			v1:   `machine: {network: {interfaces: [{interface: eth0, vlans: [{vlanId: 5, addresses: [10.5.0.1/24]}]}]}}`,
			docs: "apiVersion: v1alpha1\nkind: VLANConfig\nname: eth0.5\nvlanID: 5\nparent: eth0\n",
			errs: []string{`VLANConfig["eth0.5"].vlanID: VLAN 5 on "eth0" is already declared in the v1alpha1 document (machine.network.interfaces[0].vlans[0]): declare it in one place`},
		},
		{
			// The v1alpha1 rules of the VLAN's addresses name the document.
			name: "an invalid address",
			docs: "apiVersion: v1alpha1\nkind: VLANConfig\nname: v5\nvlanID: 5\nparent: eth0\naddresses:\n  - address: 10.5.0.256/24\n",
			errs: []string{`VLANConfig["v5"].addresses[0].address: invalid CIDR "10.5.0.256/24"`},
		},
	})
}

func TestVLANConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, vlanConfigDoc)

	checkNetDocPatch(t, vlanConfigDoc, "apiVersion: v1alpha1\nkind: VLANConfig\nname: enp0s3.2\nmtu: 1300\n",
		func(t *testing.T, cfg *configs.Config) {
			if v := iface(t, cfg, "enp0s3").VLANs; len(v) != 1 || v[0].MTU != 1300 {
				t.Errorf("after the strategic merge patch: %+v", v)
			}
		})

	checkNetDocPatch(t, vlanConfigDoc, `[{"op": "replace", "path": "/VLANConfig/enp0s3.2/vlanMode", "value": "802.1ad"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if v := netDoc[*configs.VLANConfig](t, cfg); v.Protocol() != "802.1ad" {
				t.Errorf("after the JSON patch: %+v", v)
			}
		})
}
