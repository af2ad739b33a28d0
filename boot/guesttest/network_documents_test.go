//go:build e2e

package guesttest

// networkd's logical links configured by Talos's typed documents alone
// (no machine.network), on Debian's kernel, between two guests.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/talosbox/talosbox/boot/qemu"
)

// documentsConfig is a worker's config whose network is the documents.
func documentsConfig(docs string) string {
	return "version: v1alpha1\nmachine:\n  type: worker\n---\n" + docs
}

// TestGuestBondDocuments: TestGuestBondActiveBackup's bond written as a
// BondConfig: traffic crosses it and fails over when the active member's
// cable is cut.
func TestGuestBondDocuments(t *testing.T) {
	testBondActiveBackup(t, func(addr string) string {
		return documentsConfig(fmt.Sprintf(`apiVersion: v1alpha1
kind: BondConfig
name: bond0
links: [eth0, eth1]
bondMode: active-backup
miimon: 100
addresses:
  - address: %s/24
`, addr))
	})
}

// TestGuestVLANDocuments: a VLANConfig with a name of its own ("office",
// not <parent>.<id>) on eth0, which a LinkConfig brings up: traffic
// between the guests must be tagged with VLAN 100 to arrive.
func TestGuestVLANDocuments(t *testing.T) {
	e := newEnv(t)
	w := e.segment(true)

	spec := func(name, addr, peerName, peer string) guestSpec {
		return guestSpec{
			Name: name, Check: checkVLAN, Modules: []string{"8021q"}, Link: "office", Peer: peer, PeerName: peerName,
			Config: documentsConfig(fmt.Sprintf(`apiVersion: v1alpha1
kind: LinkConfig
name: eth0
---
apiVersion: v1alpha1
kind: VLANConfig
name: office
parent: eth0
vlanID: 100
addresses:
  - address: %s/24
`, addr)),
		}
	}

	vms := e.boot(
		node{spec: spec("node0", "10.100.0.1", "node1", "10.100.0.2"), nics: []qemu.NIC{{ID: "n0", MAC: qemu.MAC(0, 0), Backend: w.Backend()}}},
		node{spec: spec("node1", "10.100.0.2", "node0", "10.100.0.1"), nics: []qemu.NIC{{ID: "n0", MAC: qemu.MAC(1, 0), Backend: w.Backend()}}},
	)

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	results(ctx, t, vms...)
}

// TestGuestWireguardDocuments: TestGuestWireGuard's tunnel written as a
// WireguardConfig, with a preshared key (which only the document can
// say) on both ends: the handshake needs it on both.
func TestGuestWireguardDocuments(t *testing.T) {
	e := newEnv(t)
	w := e.segment(false)

	var keys [2]wgtypes.Key

	for i := range keys {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}

		keys[i] = k
	}

	psk, err := wgtypes.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}

	spec := func(i int) guestSpec {
		me, peer := i, 1-i

		return guestSpec{
			Name: fmt.Sprintf("node%d", me), Check: checkWireGuard, Modules: []string{"wireguard"}, Link: "wg0",
			Peer: fmt.Sprintf("10.200.0.%d", peer+1), PeerName: fmt.Sprintf("node%d", peer),
			Config: documentsConfig(fmt.Sprintf(`apiVersion: v1alpha1
kind: LinkConfig
name: eth0
addresses:
  - address: 192.168.77.%d/24
---
apiVersion: v1alpha1
kind: WireguardConfig
name: wg0
privateKey: %s
listenPort: 51820
peers:
  - publicKey: %s
    presharedKey: %s
    endpoint: 192.168.77.%d:51820
    allowedIPs: [10.200.0.%d/32]
addresses:
  - address: 10.200.0.%d/24
`, me+1, keys[me], keys[peer].PublicKey(), psk, peer+1, peer+1, me+1)),
		}
	}

	vms := e.boot(
		node{spec: spec(0), nics: []qemu.NIC{{ID: "n0", MAC: qemu.MAC(0, 0), Backend: w.Backend()}}},
		node{spec: spec(1), nics: []qemu.NIC{{ID: "n0", MAC: qemu.MAC(1, 0), Backend: w.Backend()}}},
	)

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	for i, m := range waitAll(ctx, t, resultRe, vms...) {
		if m[1] != "ok" || !strings.Contains(m[2], "with a preshared key") {
			t.Errorf("guest %d: %s %s, want ok with a preshared key\n%s", i, m[1], m[2], vms[i].Tail(60))
		}
	}
}
