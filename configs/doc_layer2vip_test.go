package configs_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const layer2VIPConfigDoc = `apiVersion: v1alpha1
kind: Layer2VIPConfig
name: 10.5.0.100
link: eth0
`

func TestLayer2VIPConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			// Not folded: the link stays unconfigured by it (default DHCP
			// keeps running there, as in Talos); the shared IP is listed.
			name: "a shared IP on a control plane",
			docs: layer2VIPConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				if cfg.Machine.Network != nil && len(cfg.Machine.Network.Interfaces) > 0 {
					t.Errorf("folded into interfaces: %+v", cfg.Machine.Network.Interfaces)
				}

				if ips := cfg.SharedIPs(); !slices.Equal(ips, []netip.Addr{netip.MustParseAddr("10.5.0.100")}) {
					t.Errorf("SharedIPs = %v", ips)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 10.5.0.100\ninterface: eth0\n",
			decodeErr: `unknown field "interface" in Layer2VIPConfig["10.5.0.100"]`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 10.5.0.100\nlink: [eth0]\n",
			decodeErr: `Layer2VIPConfig["10.5.0.100"].link: expected a single value, got`,
		},
		{
			name: "Talos's rules",
			docs: "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: vip.example.org\n---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 0.0.0.0\nlink: eth1\n",
			errs: []string{
				`Layer2VIPConfig["vip.example.org"].name: name must be a valid IP address: the shared IP, got "vip.example.org"`,
				`Layer2VIPConfig["vip.example.org"].link: link must be specified: the link the shared IP is announced on (eth0)`,
				`Layer2VIPConfig["0.0.0.0"].name: 0.0.0.0 cannot be a shared IP: want a unicast address of the link's subnet`,
			},
		},
		{
			name: "on a worker",
			base: "worker",
			docs: layer2VIPConfigDoc,
			errs: []string{`Layer2VIPConfig["10.5.0.100"]: virtual (shared) IP is not allowed on non-controlplane nodes`},
		},
		{
			name: "two on one link",
			docs: layer2VIPConfigDoc + "---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 10.5.0.101\nlink: eth0\n",
			errs: []string{`Layer2VIPConfig["10.5.0.101"].link: link "eth0" already has the shared IP 10.5.0.100 (Layer2VIPConfig "10.5.0.100"): a link has one`},
		},
		{
			name: "machine.network's vip on the same link",
			v1:   `machine: {network: {interfaces: [{interface: eth0, dhcp: true, vip: {ip: 10.5.0.99}}, {interface: eth1, vlans: [{vlanId: 4, vip: {ip: 10.4.0.99}}]}]}}`,
			docs: layer2VIPConfigDoc + "---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 10.4.0.100\nlink: eth1.4\n",
			errs: []string{
				`Layer2VIPConfig["10.5.0.100"].link: link "eth0" already has the shared IP 10.5.0.99 in the v1alpha1 document (machine.network.interfaces[0].vip): a link has one`,
				`Layer2VIPConfig["10.4.0.100"].link: link "eth1.4" already has the shared IP 10.4.0.99 in the v1alpha1 document (machine.network.interfaces[1].vlans[0].vip): a link has one`,
			},
		},
	})
}

func TestLayer2VIPConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, layer2VIPConfigDoc)

	checkNetDocPatch(t, layer2VIPConfigDoc, "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 10.5.0.100\nlink: eth1\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := netDoc[*configs.Layer2VIPConfig](t, cfg); d.Link != "eth1" {
				t.Errorf("after the strategic merge patch: %+v", d)
			}
		})

	checkNetDocPatch(t, layer2VIPConfigDoc, `[{"op": "add", "path": "/Layer2VIPConfig/10.5.0.101", "value": {"link": "eth2"}}]`,
		func(t *testing.T, cfg *configs.Config) {
			want := []netip.Addr{netip.MustParseAddr("10.5.0.100"), netip.MustParseAddr("10.5.0.101")}
			if ips := cfg.SharedIPs(); !slices.Equal(ips, want) {
				t.Errorf("after the JSON patch: SharedIPs = %v, want %v", ips, want)
			}
		})
}
