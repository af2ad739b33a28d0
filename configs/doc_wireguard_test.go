package configs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

const wireguardConfigDoc = `apiVersion: v1alpha1
kind: WireguardConfig
name: wg.int
privateKey: GA1E1VB+g41Dl0+UH2TMW9C5953y+moVg6JIIqkJbmw=
listenPort: 5042
firewallMark: 176
peers:
  - publicKey: 735jkJdcVDninU5PzLJ/S+bfN6Q3QOk6svWrVLMJQAk=
    allowedIPs:
      - 192.168.1.0/24
  - publicKey: uvdlJNva1X8/OCOZM+0gGT4Yu9x20odd3AWbbQUF7nM=
    presharedKey: 6j4UMxwszrHVZZUjY8/SFsZMjgaHkxV7yp9Tz05btho=
    endpoint: 10.3.4.3:2222
    persistentKeepaliveInterval: 25s
up: true
mtu: 1420
addresses:
  - address: 192.168.1.100/32
`

func TestWireguardConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into machine.network's wireguard",
			docs: wireguardConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				d := iface(t, cfg, "wg.int")
				wg := d.WireGuard

				if wg == nil || wg.PrivateKey != "GA1E1VB+g41Dl0+UH2TMW9C5953y+moVg6JIIqkJbmw=" || wg.ListenPort != 5042 || wg.FirewallMark != 176 ||
					len(wg.Peers) != 2 || wg.Peers[1].Endpoint != "10.3.4.3:2222" || wg.Peers[1].PersistentKeepaliveInterval != 25*time.Second ||
					d.MTU != 1420 {
					t.Fatalf("wg.int: %+v, wireguard %+v", d, wg)
				}

				// v1alpha1 has no preshared key: networkd reads it from the document.
				if psk := netDoc[*configs.WireguardConfig](t, cfg).PresharedKey(wg.Peers[1].PublicKey); psk != "6j4UMxwszrHVZZUjY8/SFsZMjgaHkxV7yp9Tz05btho=" {
					t.Errorf("preshared key %q", psk)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: WireguardConfig\nname: wg0\npeers:\n  - publicKey: x\n    psk: y\n",
			decodeErr: `unknown field "psk" in WireguardConfig["wg0"].peers[0]`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: WireguardConfig\nname: wg0\nlistenPort: [1]\n",
			decodeErr: `WireguardConfig["wg0"].listenPort: expected a single value, got`,
		},
		{
			// machine.network's wireguard rules, under the document's
			// name, and the document's own.
			name: "bad keys and endpoints",
			docs: `apiVersion: v1alpha1
kind: WireguardConfig
name: wg0
listenPort: 70000
peers:
  - publicKey: short
    presharedKey: alsoshort
    endpoint: peer.example.org:51820
    allowedIPs: [10.0.0.1]
`,
			errs: []string{
				`WireguardConfig["wg0"].privateKey: wireguard private key is required`,
				`WireguardConfig["wg0"].listenPort: invalid listen port 70000: must be between 1 and 65535`,
				`WireguardConfig["wg0"].peers[0].publicKey: invalid wireguard public key: must be base64 of 32 bytes`,
				`WireguardConfig["wg0"].peers[0].allowedIPs[0]: invalid CIDR "10.0.0.1"`,
				`WireguardConfig["wg0"].peers[0].presharedKey: invalid wireguard peer preshared key: must be base64 of 32 bytes`,
				`WireguardConfig["wg0"].peers[0].endpoint: wireguard peer endpoint "peer.example.org:51820" must be an IP address and a port (10.0.0.1:51820, [2001:db8::1]:51820): a WireguardConfig resolves no names`,
			},
		},
		{
			name: "already a wireguard link in machine.network",
			v1:   `machine: {network: {interfaces: [{interface: wg0, wireguard: {privateKey: GA1E1VB+g41Dl0+UH2TMW9C5953y+moVg6JIIqkJbmw=}}]}}`,
			docs: "apiVersion: v1alpha1\nkind: WireguardConfig\nname: wg0\nprivateKey: GA1E1VB+g41Dl0+UH2TMW9C5953y+moVg6JIIqkJbmw=\n",
			errs: []string{`WireguardConfig["wg0"]: link "wg0" is already a wireguard link in the v1alpha1 document (machine.network.interfaces[0].wireguard): a wireguard link is declared in one place; remove one of them`},
		},
	})
}

func TestWireguardConfigRoundTripRedactionAndPatches(t *testing.T) {
	t.Parallel()

	// The private key and the preshared key are secrets; public keys not.
	checkNetDocRoundTrip(t, wireguardConfigDoc, "GA1E1VB+g41Dl0+UH2TMW9C5953y+moVg6JIIqkJbmw=", "6j4UMxwszrHVZZUjY8/SFsZMjgaHkxV7yp9Tz05btho=")

	cfg, err := configs.Decode([]byte(netDocConfig(t, "", "", wireguardConfigDoc)))
	if err != nil {
		t.Fatal(err)
	}

	red, err := cfg.EncodeRedacted()
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(red), "publicKey: uvdlJNva1X8/OCOZM+0gGT4Yu9x20odd3AWbbQUF7nM=") {
		t.Errorf("the redacted encoding lost a public key:\n%s", red)
	}

	checkNetDocPatch(t, wireguardConfigDoc, "apiVersion: v1alpha1\nkind: WireguardConfig\nname: wg.int\nlistenPort: 51820\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := iface(t, cfg, "wg.int"); d.WireGuard.ListenPort != 51820 {
				t.Errorf("after the strategic merge patch: %+v", d.WireGuard)
			}
		})

	checkNetDocPatch(t, wireguardConfigDoc, `[{"op": "remove", "path": "/WireguardConfig/wg.int/peers/1/presharedKey"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if w := netDoc[*configs.WireguardConfig](t, cfg); w.Peers[1].PresharedKey != "" {
				t.Errorf("after the JSON patch: %+v", w.Peers[1])
			}
		})
}
