package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const bondConfigDoc = `apiVersion: v1alpha1
kind: BondConfig
name: agg.0
hardwareAddr: 02:00:00:00:b0:01
links:
  - eth0
  - eth1
bondMode: 802.3ad
miimon: 100
updelay: 200
downdelay: 200
xmitHashPolicy: layer3+4
lacpRate: slow
minLinks: 1
up: true
addresses:
  - address: 1.2.3.4/24
`

func TestBondConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into machine.network's bond",
			docs: bondConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				d := iface(t, cfg, "agg.0")
				want := &configs.Bond{Interfaces: []string{"eth0", "eth1"}, Mode: "802.3ad", HashPolicy: "layer3+4", LACPRate: "slow",
					MIIMon: 100, UpDelay: 200, DownDelay: 200, MinLinks: 1}

				if !reflect.DeepEqual(d.Bond, want) || !reflect.DeepEqual(d.Addresses, []string{"1.2.3.4/24"}) {
					t.Errorf("agg.0: %+v, bond %+v", d, d.Bond)
				}

				// networkd reads the MAC address from the document.
				if b := netDoc[*configs.BondConfig](t, cfg); b.LinkHardwareAddr() != "02:00:00:00:b0:01" {
					t.Errorf("document: %+v", b)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth0]\ninterfaces: [eth1]\n",
			decodeErr: `unknown field "interfaces" in BondConfig["bond0"]`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: eth0\n",
			decodeErr: `BondConfig["bond0"].links: expected a sequence, got`,
		},
		{
			name: "Talos's rules",
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\n",
			errs: []string{
				`BondConfig["bond0"].links: at least one link must be specified: the bond's members`,
				`BondConfig["bond0"].bondMode: bond mode must be specified (balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb)`,
			},
		},
		{
			name:  "802.3ad without link monitoring",
			docs:  "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: 802.3ad\nlinks: [eth0, eth1]\n",
			warns: []string{`BondConfig["bond0"].miimon: miimon was not specified for 802.3ad bond`, `BondConfig["bond0"].updelay: updelay was not specified for 802.3ad bond`, `BondConfig["bond0"].downdelay: downdelay was not specified for 802.3ad bond`},
		},
		{
			// The v1alpha1 rules of the bond's options, named in the
			// document's words.
			name: "machine.network's bond rules",
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: fastest\nlinks: [eth0]\nmiimon: 100\nupdelay: 150\n---\n" +
				"apiVersion: v1alpha1\nkind: BondConfig\nname: bond1\nbondMode: active-backup\nlinks: [eth1]\nlacpRate: fast\n",
			errs: []string{
				`BondConfig["bond0"].bondMode: unsupported bond mode "fastest" (expected one of balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb)`,
				`BondConfig["bond0"].updelay: bond.upDelay should be a multiple of miiMon`,
				`BondConfig["bond1"].lacpRate: bond.lacpRate is not available in active-backup mode (only in 802.3ad)`,
			},
		},
		{
			name: "options networkd does not apply",
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth0, eth1]\nprimary: eth0\nfailOverMac: follow\n",
			errs: []string{
				`BondConfig["bond0"].failOverMac: talosbox does not implement the bond option failOverMac yet (networkd sets bondMode, xmitHashPolicy, lacpRate, miimon, updelay, downdelay and minLinks): remove it, or the bond would run with the driver's default`,
				`BondConfig["bond0"].primary: talosbox does not implement the bond option primary yet (networkd sets bondMode, xmitHashPolicy, lacpRate, miimon, updelay, downdelay and minLinks): remove it, or the bond would run with the driver's default`,
			},
		},
		{
			name: "bad MAC address",
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth0]\nhardwareAddr: 01:00:5e:00:00:01\n---\n" +
				"apiVersion: v1alpha1\nkind: BondConfig\nname: bond1\nbondMode: active-backup\nlinks: [eth1]\nhardwareAddr: nope\n",
			errs: []string{
				`BondConfig["bond0"].hardwareAddr: MAC address 01:00:5e:00:00:01 is a multicast address: a link's address must be unicast (an even first byte)`,
				`BondConfig["bond1"].hardwareAddr: invalid MAC address "nope": want six colon-separated hex bytes (2e:3c:4d:5e:6f:70)`,
			},
		},
		{
			name: "a member of two bonds",
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth0]\n---\n" +
				"apiVersion: v1alpha1\nkind: BondConfig\nname: bond1\nbondMode: active-backup\nlinks: [eth0]\n",
			errs: []string{`BondConfig["bond1"].links[0]: interface "eth0" is declared as part of two separate links`},
		},
		{
			name: "already a bond in machine.network",
			v1:   `machine: {network: {interfaces: [{interface: bond0, bond: {mode: active-backup, interfaces: [eth0]}}]}}`,
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth1]\n",
			errs: []string{`BondConfig["bond0"]: link "bond0" is already a bond link in the v1alpha1 document (machine.network.interfaces[0].bond): a bond link is declared in one place; remove one of them`},
		},
		{
			name: "the same name as a LinkConfig",
			docs: "apiVersion: v1alpha1\nkind: LinkConfig\nname: bond0\nmtu: 1400\n---\napiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth1]\n",
			errs: []string{`BondConfig["bond0"]: link "bond0" is already configured by LinkConfig "bond0": a link is configured by one document (Talos refuses both)`},
		},
	})
}

func TestBondConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, bondConfigDoc)

	checkNetDocPatch(t, bondConfigDoc, "apiVersion: v1alpha1\nkind: BondConfig\nname: agg.0\nlinks: [eth2]\nmiimon: 50\n",
		func(t *testing.T, cfg *configs.Config) {
			if b := netDoc[*configs.BondConfig](t, cfg); !reflect.DeepEqual(b.Links, []string{"eth0", "eth1", "eth2"}) || *b.MIIMon != 50 {
				t.Errorf("after the strategic merge patch: links %v, miimon %d", b.Links, *b.MIIMon)
			}
		})

	checkNetDocPatch(t, bondConfigDoc, `[{"op": "replace", "path": "/BondConfig/agg.0/bondMode", "value": "active-backup"}, {"op": "remove", "path": "/BondConfig/agg.0/lacpRate"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if b := netDoc[*configs.BondConfig](t, cfg); b.BondMode != "active-backup" || b.LACPRate != "" {
				t.Errorf("after the JSON patch: %+v", b)
			}

			if d := iface(t, cfg, "agg.0"); d.Bond.Mode != "active-backup" {
				t.Errorf("effective bond: %+v", d.Bond)
			}
		})
}
