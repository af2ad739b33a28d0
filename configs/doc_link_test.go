package configs_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const linkConfigDoc = `apiVersion: v1alpha1
kind: LinkConfig
name: enp0s1
up: true
mtu: 9000
addresses:
  - address: 192.168.1.100/24
  - address: 2001:db8::1/64
routes:
  - destination: 10.3.5.0/24
    gateway: 10.3.5.1
  - gateway: fe80::1
  - destination: 10.7.0.0/16
    gateway: 192.168.1.1
    table: "100"
multicast: true
`

func TestLinkConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "Talos's example folds into machine.network",
			docs: linkConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				d := iface(t, cfg, "enp0s1")
				if d.MTU != 9000 || !reflect.DeepEqual(d.Addresses, []string{"192.168.1.100/24", "2001:db8::1/64"}) {
					t.Errorf("enp0s1: %+v", d)
				}

				// The route of table 100 stays in the document: networkd reads it there.
				want := []configs.Route{{Network: "10.3.5.0/24", Gateway: "10.3.5.1"}, {Gateway: "fe80::1"}}
				if !reflect.DeepEqual(d.Routes, want) {
					t.Errorf("routes %+v, want %+v", d.Routes, want)
				}

				if l := netDoc[*configs.LinkConfig](t, cfg); *l.Up != true || *l.Multicast != true || l.Routes[2].Table != "100" {
					t.Errorf("document: %+v", l)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nmtuu: 9000\n",
			decodeErr: `unknown field "mtuu" in LinkConfig["eth0"] (did you mean "mtu"?)`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nmtu: big\n",
			decodeErr: `LinkConfig["eth0"].mtu:`,
		},
		{
			name: "no name",
			docs: "apiVersion: v1alpha1\nkind: LinkConfig\nmtu: 1400\n",
			errs: []string{`LinkConfig[""].name: name must be specified: the link's name (eth0, enp0s3)`},
		},
		{
			name: "bad addresses",
			docs: `apiVersion: v1alpha1
kind: LinkConfig
name: eth0
addresses:
  - address: 10.0.0.5
  - address: 0.0.0.0/0
  - address: 10.0.0.300/24
  - address: ""
  - address: 10.0.0.6/24
    routePriority: 100
`,
			errs: []string{
				// The v1alpha1 rule, named where the document says it.
				`LinkConfig["eth0"].addresses[2].address: invalid CIDR "10.0.0.300/24"`,
				`LinkConfig["eth0"].addresses[0].address: address "10.0.0.5" has no prefix length: write it as 10.0.0.5/32 (or the subnet's length)`,
				`LinkConfig["eth0"].addresses[1].address: address "0.0.0.0/0" is unspecified: a link address must be a host's`,
				`LinkConfig["eth0"].addresses[3].address: address must be specified: an IP address with its prefix length (192.168.1.10/24)`,
				`LinkConfig["eth0"].addresses[4].routePriority: talosbox does not implement an address's routePriority yet (the kernel gives the prefix route its default metric): remove it, or add the prefix route with its metric in routes`,
			},
		},
		{
			name: "bad routes",
			docs: `apiVersion: v1alpha1
kind: LinkConfig
name: eth0
mtu: 20
routes:
  - destination: 0.0.0.0/0
    gateway: 10.0.0.1
  - gateway: 0.0.0.0
  - destination: 10.1.0.0/16
    gateway: 10.0.0.x
  - destination: 10.2.0.0/16
    gateway: 10.0.0.1
    table: nope
  - destination: 10.3.0.0/16
    gateway: 2001:db8::1
    table: "7"
  - table: local
`,
			errs: []string{
				// The v1alpha1 rules of the folded routes and MTU, then the
				// document's own and those of the routes of other tables.
				`LinkConfig["eth0"].routes[2].gateway: invalid gateway address "10.0.0.x"`,
				`LinkConfig["eth0"].mtu: invalid MTU 20: must be between 68 and 65535`,
				`LinkConfig["eth0"].routes[0].destination: destination 0.0.0.0/0 is the default route: leave destination out for a default route`,
				`LinkConfig["eth0"].routes[1].gateway: gateway 0.0.0.0 is unspecified: leave it out instead`,
				`LinkConfig["eth0"].routes[3].table: invalid routing table "nope": want main, local, default or a number from 1 to 252`,
				`LinkConfig["eth0"].routes[4].gateway: gateway 2001:db8::1 and network 10.3.0.0/16 are of different address families`,
				`LinkConfig["eth0"].routes[5]: route needs a network, a gateway or both`,
			},
		},
		{
			name: "two documents for one link",
			docs: "apiVersion: v1alpha1\nkind: DummyLinkConfig\nname: eth0\n---\napiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nmtu: 1400\n",
			errs: []string{`LinkConfig["eth0"]: link "eth0" is already configured by DummyLinkConfig "eth0": a link is configured by one document (Talos refuses both)`},
		},
		{
			name: "a link the v1alpha1 document ignores",
			v1:   `machine: {network: {interfaces: [{interface: eth0, ignore: true}]}}`,
			docs: "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nmtu: 1400\n",
			errs: []string{`LinkConfig["eth0"]: link "eth0" is ignored by the v1alpha1 document (machine.network.interfaces[0].ignore): a document cannot configure it too; remove one of them`},
		},
		{
			// Talos's merge: the document's MTU wins, addresses and routes
			// add up.
			name: "the same link in machine.network",
			v1:   `machine: {network: {interfaces: [{interface: eth0, mtu: 1500, addresses: [10.0.0.5/24], routes: [{network: 10.9.0.0/16, gateway: 10.0.0.1}]}]}}`,
			docs: "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nmtu: 9000\naddresses:\n  - address: 10.0.1.5/24\nroutes:\n  - gateway: 10.0.0.1\n",
			effective: func(t *testing.T, cfg *configs.Config) {
				d := iface(t, cfg, "eth0")
				want := configs.Device{Interface: "eth0", MTU: 9000, Addresses: []string{"10.0.0.5/24", "10.0.1.5/24"},
					Routes: []configs.Route{{Network: "10.9.0.0/16", Gateway: "10.0.0.1"}, {Gateway: "10.0.0.1"}}}

				if !reflect.DeepEqual(d, want) {
					t.Errorf("eth0:\ngot  %+v\nwant %+v", d, want)
				}

				if w := cfg.V1Alpha1().Machine.Network.Interfaces[0]; w.MTU != 1500 || len(w.Addresses) != 1 {
					t.Errorf("the v1alpha1 document as written changed: %+v", w)
				}
			},
		},
		{
			// machine.network's VLAN eth0.5 is the link of that name.
			name: "a v1alpha1 VLAN",
			v1:   `machine: {network: {interfaces: [{interface: eth0, vlans: [{vlanId: 5}]}]}}`,
			docs: "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0.5\naddresses:\n  - address: 10.5.0.2/24\n",
			effective: func(t *testing.T, cfg *configs.Config) {
				if v := iface(t, cfg, "eth0").VLANs; len(v) != 1 || !reflect.DeepEqual(v[0].Addresses, []string{"10.5.0.2/24"}) {
					t.Errorf("eth0's VLANs: %+v", v)
				}
			},
		},
		{
			name: "a bond member with an address of its own",
			docs: "apiVersion: v1alpha1\nkind: BondConfig\nname: bond0\nbondMode: active-backup\nlinks: [eth0]\n---\n" +
				"apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\naddresses:\n  - address: 10.0.0.5/24\n",
			errs: []string{`LinkConfig["eth0"]: interface "eth0" is a member of "bond0" and cannot have addressing of its own`},
		},
	})
}

func TestLinkConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, linkConfigDoc)

	checkNetDocPatch(t, linkConfigDoc, "apiVersion: v1alpha1\nkind: LinkConfig\nname: enp0s1\nmtu: 1500\naddresses:\n  - address: 10.0.0.5/24\n",
		func(t *testing.T, cfg *configs.Config) {
			l := netDoc[*configs.LinkConfig](t, cfg)
			if l.MTU != 1500 || len(l.Addresses) != 3 || l.Addresses[2].Address != "10.0.0.5/24" {
				t.Errorf("after the strategic merge patch: %+v", l)
			}

			if d := iface(t, cfg, "enp0s1"); d.MTU != 1500 || len(d.Addresses) != 3 {
				t.Errorf("effective: %+v", d)
			}
		})

	checkNetDocPatch(t, linkConfigDoc, `[{"op": "replace", "path": "/LinkConfig/enp0s1/mtu", "value": 1280}, {"op": "remove", "path": "/LinkConfig/enp0s1/routes/2"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if l := netDoc[*configs.LinkConfig](t, cfg); l.MTU != 1280 || len(l.Routes) != 2 {
				t.Errorf("after the JSON patch: %+v", l)
			}
		})
}

// A problem a v1alpha1 rule finds in what a document folded is located at
// the document's line, not at a v1alpha1 line that was never written.
func TestLinkConfigProblemLines(t *testing.T) {
	t.Parallel()

	text := netDocConfig(t, "", "", "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\naddresses:\n  - address: 10.0.0.300/24\n")

	_, _, err := configs.Load([]byte(text), configs.ModeMetal)

	line := strings.Count(text[:strings.Index(text, "10.0.0.300")], "\n") + 1
	want := fmt.Sprintf(`line %d: LinkConfig["eth0"].addresses[0].address: invalid CIDR "10.0.0.300/24"`, line)

	if got := problems(err); len(got) != 1 || got[0] != want {
		t.Errorf("problems %q, want %q", got, want)
	}
}
