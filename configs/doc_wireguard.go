package configs

import (
	"net/netip"
	"time"
)

// WireguardConfig is Talos's WireguardConfig: a WireGuard tunnel link. It
// is machine.network.interfaces[name].wireguard; networkd reads the
// peers' preshared keys (which v1alpha1 has no field for), up and
// multicast from the document.
type WireguardConfig struct {
	Name         string          `yaml:"name"`
	PrivateKey   string          `yaml:"privateKey,omitempty" secret:"true"`
	ListenPort   int             `yaml:"listenPort,omitempty"`
	FirewallMark int             `yaml:"firewallMark,omitempty"`
	Peers        []WireguardPeer `yaml:"peers,omitempty"`

	Up        *bool         `yaml:"up,omitempty"`
	MTU       uint32        `yaml:"mtu,omitempty"`
	Addresses []LinkAddress `yaml:"addresses,omitempty"`
	Routes    []LinkRoute   `yaml:"routes,omitempty"`
	Multicast *bool         `yaml:"multicast,omitempty"`
}

// WireguardPeer is one remote end of a WireguardConfig tunnel.
type WireguardPeer struct {
	PublicKey    string `yaml:"publicKey,omitempty"`
	PresharedKey string `yaml:"presharedKey,omitempty" secret:"true"`
	// Endpoint is an IP address and port.
	Endpoint                    string        `yaml:"endpoint,omitempty"`
	PersistentKeepaliveInterval time.Duration `yaml:"persistentKeepaliveInterval,omitempty"`
	AllowedIPs                  []string      `yaml:"allowedIPs,omitempty"`
}

// Kind implements Document.
func (*WireguardConfig) Kind() string { return "WireguardConfig" }

// DocumentName implements NamedDocument.
func (w *WireguardConfig) DocumentName() string { return w.Name }

// LinkSettings implements LinkDocument.
func (w *WireguardConfig) LinkSettings() LinkSettings {
	return LinkSettings{Up: w.Up, MTU: w.MTU, Addresses: w.Addresses, Routes: w.Routes, Multicast: w.Multicast}
}

// PresharedKey is the preshared key of the peer with publicKey, "" when
// it has none.
func (w *WireguardConfig) PresharedKey(publicKey string) string {
	for _, p := range w.Peers {
		if p.PublicKey == publicKey {
			return p.PresharedKey
		}
	}

	return ""
}

// check: the keys, ports and addresses are machine.network's wireguard
// settings, checked there under this document's name; here what
// v1alpha1 does not have.
func (w *WireguardConfig) check(v *validator, path string) {
	v.linkName(path, w.Name)

	for i, p := range w.Peers {
		pp := indexPath(path+".peers", i)

		if p.PresharedKey != "" {
			v.check(pp+".presharedKey", checkBase64Key("wireguard peer preshared key", p.PresharedKey, 32))
		}

		if p.Endpoint != "" && checkHostPort("", p.Endpoint) == nil {
			if _, err := netip.ParseAddrPort(p.Endpoint); err != nil {
				v.errorf(pp+".endpoint", "wireguard peer endpoint %q must be an IP address and a port (10.0.0.1:51820, [2001:db8::1]:51820): "+
					"a WireguardConfig resolves no names", p.Endpoint)
			}
		}
	}

	v.linkSettings(path, w.LinkSettings())
	v.linkClaims(path, w)
}

func (w *WireguardConfig) fold(f *folding) {
	if w.Name == "" {
		return // refused by check: there is no link to fold into
	}

	if f.linkKindConflict(w.Name, "wireguard") {
		return
	}

	dev := f.deviceTarget(w.Name)
	wg := &WireGuardConfig{PrivateKey: w.PrivateKey, ListenPort: w.ListenPort, FirewallMark: w.FirewallMark}

	for _, p := range w.Peers {
		wg.Peers = append(wg.Peers, WireGuardPeer{PublicKey: p.PublicKey, Endpoint: p.Endpoint,
			PersistentKeepaliveInterval: p.PersistentKeepaliveInterval, AllowedIPs: p.AllowedIPs})
	}

	f.network().Interfaces[dev].WireGuard = wg
	// The keys of v1alpha1's wireguard section are the document's.
	f.alias(indexPath("machine.network.interfaces", dev)+".wireguard", "")
	f.foldLink(linkTarget{dev: dev, vlan: -1}, w.LinkSettings())
}
