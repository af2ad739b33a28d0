package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const dhcpv6ConfigDoc = `apiVersion: v1alpha1
kind: DHCPv6Config
name: enp0s3
clientIdentifier: mac
`

const dhcpv6Refused = `talosbox does not implement DHCPv6 yet (it has no DHCPv6 client): remove the document, and give the link its IPv6 addresses in a LinkConfig`

func TestDHCPv6Config(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "refused: no DHCPv6 client",
			docs: dhcpv6ConfigDoc,
			errs: []string{`DHCPv6Config["enp0s3"]: ` + dhcpv6Refused},
			effective: func(t *testing.T, cfg *configs.Config) {
				if cfg.Machine.Network != nil && len(cfg.Machine.Network.Interfaces) > 0 {
					t.Errorf("a refused document folded: %+v", cfg.Machine.Network.Interfaces)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: DHCPv6Config\nname: eth0\nignoreRoutes: true\n",
			decodeErr: `unknown field "ignoreRoutes" in DHCPv6Config["eth0"]`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: DHCPv6Config\nname: eth0\nignoreHostname: 1.5\n",
			decodeErr: `DHCPv6Config["eth0"].ignoreHostname:`,
		},
		{
			name: "Talos's rules too",
			docs: "apiVersion: v1alpha1\nkind: DHCPv6Config\nname: eth0\nduidRaw: 00:01:02\n",
			errs: []string{
				`DHCPv6Config["eth0"].duidRaw: duidRaw can only be set if clientIdentifier is 'duid'`,
				`DHCPv6Config["eth0"]: ` + dhcpv6Refused,
			},
		},
	})
}

func TestDHCPv6ConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, dhcpv6ConfigDoc)

	checkNetDocPatch(t, dhcpv6ConfigDoc, "apiVersion: v1alpha1\nkind: DHCPv6Config\nname: enp0s3\nrouteMetric: 100\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := netDoc[*configs.DHCPv6Config](t, cfg); d.RouteMetric != 100 || d.ClientIdentifier != "mac" {
				t.Errorf("after the strategic merge patch: %+v", d)
			}
		})

	checkNetDocPatch(t, dhcpv6ConfigDoc, `[{"op": "remove", "path": "/DHCPv6Config/enp0s3"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if docs := configs.DocumentsOf[*configs.DHCPv6Config](cfg); len(docs) != 0 {
				t.Errorf("after the JSON patch: %+v", docs)
			}
		})
}
