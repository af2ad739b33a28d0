package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const dhcpv4ConfigDoc = `apiVersion: v1alpha1
kind: DHCPv4Config
name: enp0s3
routeMetric: 512
ignoreHostname: true
ignoreRoutes: true
clientIdentifier: duid
duidRaw: 00:01:00:01:23:45:67:89:ab:cd:ef:01:23:45
`

func TestDHCPv4Config(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into machine.network's DHCP",
			docs: dhcpv4ConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				if d := iface(t, cfg, "enp0s3"); !d.DHCP || d.DHCPOptions == nil || d.DHCPOptions.RouteMetric != 512 {
					t.Errorf("enp0s3: %+v", d)
				}

				// networkd reads the rest from the document.
				if d := netDoc[*configs.DHCPv4Config](t, cfg); d.Identifier() != "duid" || len(d.DUID()) != 14 || !*d.IgnoreRoutes {
					t.Errorf("document: %+v", d)
				}
			},
		},
		{
			name: "the client identifier defaults to the MAC address",
			docs: "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\n",
			effective: func(t *testing.T, cfg *configs.Config) {
				if id := netDoc[*configs.DHCPv4Config](t, cfg).Identifier(); id != configs.ClientIdentifierMAC {
					t.Errorf("identifier %q", id)
				}
			},
		},
		{
			// Talos runs both clients; the document asks for DHCPv4.
			name: "machine.network's entry said ipv4: false",
			v1:   `machine: {network: {interfaces: [{interface: eth0, dhcp: true, dhcpOptions: {ipv4: false, ipv6: true, routeMetric: 100}}]}}`,
			docs: "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\nrouteMetric: 200\n",
			warns: []string{"machine.network.interfaces[0].dhcpOptions.ipv6: talosbox has no DHCPv6 client yet: the link gets no DHCPv6 lease, " +
				"only a DHCPv4 one and the addresses router advertisements give"},
			effective: func(t *testing.T, cfg *configs.Config) {
				if o := iface(t, cfg, "eth0").DHCPOptions; o == nil || !*o.IPv4 || !*o.IPv6 || o.RouteMetric != 200 {
					t.Errorf("eth0's DHCP options: %+v", o)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\nclientId: mac\n",
			decodeErr: `unknown field "clientId" in DHCPv4Config["eth0"]`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\nrouteMetric: -1\n",
			decodeErr: `DHCPv4Config["eth0"].routeMetric:`,
		},
		{
			name: "Talos's rules",
			docs: "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\nclientIdentifier: duid\n---\n" +
				"apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth1\nduidRaw: 00:01:02\n---\n" +
				"apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth2\nclientIdentifier: serial\n---\n" +
				"apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth3\nclientIdentifier: DUID\nduidRaw: zz:01\n---\n" +
				"apiVersion: v1alpha1\nkind: DHCPv4Config\n",
			errs: []string{
				`DHCPv4Config["eth0"].duidRaw: duidRaw must be set if clientIdentifier is 'duid'`,
				`DHCPv4Config["eth1"].duidRaw: duidRaw can only be set if clientIdentifier is 'duid'`,
				`DHCPv4Config["eth2"].clientIdentifier: invalid client identifier "serial": want mac, duid or none`,
				`DHCPv4Config["eth3"].duidRaw: invalid DUID "zz:01": want hex bytes, colon-separated (00:01:00:01:...)`,
				`DHCPv4Config[""].name: name must be specified: the link's name (eth0, enp0s3)`,
			},
		},
	})
}

func TestDHCPv4ConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, dhcpv4ConfigDoc)

	checkNetDocPatch(t, dhcpv4ConfigDoc, "apiVersion: v1alpha1\nkind: DHCPv4Config\nname: enp0s3\nrouteMetric: 1024\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := iface(t, cfg, "enp0s3"); d.DHCPOptions.RouteMetric != 1024 {
				t.Errorf("after the strategic merge patch: %+v", d.DHCPOptions)
			}
		})

	checkNetDocPatch(t, dhcpv4ConfigDoc, `[{"op": "replace", "path": "/DHCPv4Config/enp0s3/clientIdentifier", "value": "none"}, {"op": "remove", "path": "/DHCPv4Config/enp0s3/duidRaw"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if d := netDoc[*configs.DHCPv4Config](t, cfg); d.Identifier() != "none" || d.DUIDRaw != "" {
				t.Errorf("after the JSON patch: %+v", d)
			}
		})
}
