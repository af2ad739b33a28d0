//go:build e2e

package guesttest

// networkd's logical links on Debian's kernel, between two guests (a
// dummy link needs only one).

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/talosbox/talosbox/boot/qemu"
)

// nicID maps a guest's interface name to the netdev ID of the NIC behind
// it: NICs are added in order, so ethN is nN.
func nicID(iface string) string {
	var n int
	if _, err := fmt.Sscanf(iface, "eth%d", &n); err != nil {
		return ""
	}

	return fmt.Sprintf("n%d", n)
}

// TestGuestBondActiveBackup: two guests, each with eth0 and eth1 on two
// separate segments, bond them in active-backup with miimon. Traffic crosses
// the bond; after the host pulls the active member's cable on both ends
// (QMP set_link off: carrier lost, frames dropped) the bonds fail over to
// the other member and traffic crosses again, with networkd still running
// and not undoing anything.
func TestGuestBondActiveBackup(t *testing.T) {
	testBondActiveBackup(t, func(addr string) string {
		return machineConfig(fmt.Sprintf(`      - interface: bond0
        addresses: [%s/24]
        bond:
          interfaces: [eth0, eth1]
          mode: active-backup
          miimon: 100
`, addr))
	})
}

// testBondActiveBackup is TestGuestBondActiveBackup with the guests'
// config made by cfg from the guest's address.
func testBondActiveBackup(t *testing.T, cfg func(addr string) string) {
	e := newEnv(t)
	w0, w1 := e.segment(false), e.segment(false)

	spec := func(name, addr, peerName, peer string) guestSpec {
		return guestSpec{Name: name, Check: checkBond, Modules: []string{"bonding"}, Config: cfg(addr), Link: "bond0", Peer: peer, PeerName: peerName}
	}

	vms := e.boot(
		node{spec: spec("node0", "10.10.0.1", "node1", "10.10.0.2"), nics: []qemu.NIC{
			{ID: "n0", MAC: qemu.MAC(0, 0), Backend: w0.Backend()}, {ID: "n1", MAC: qemu.MAC(0, 1), Backend: w1.Backend()},
		}},
		node{spec: spec("node1", "10.10.0.2", "node0", "10.10.0.1"), nics: []qemu.NIC{
			{ID: "n0", MAC: qemu.MAC(1, 0), Backend: w0.Backend()}, {ID: "n1", MAC: qemu.MAC(1, 1), Backend: w1.Backend()},
		}},
	)

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	ready := waitAll(ctx, t, regexp.MustCompile(markPhase+` \S+ bond-ready active=(\S+) `), vms...)

	active := ready[0][1]
	if ready[1][1] != active {
		// Traffic crossed, so this cannot happen with active-backup's
		// inactive-member drop; it would make the cut below meaningless.
		t.Fatalf("the guests' bonds use different active members: %s and %s", active, ready[1][1])
	}

	id := nicID(active)
	if id == "" {
		t.Fatalf("active member %q is not an ethN NIC", active)
	}

	for _, vm := range vms {
		if err := vm.SetLink(ctx, id, false); err != nil {
			t.Fatal(err)
		}
	}

	t.Logf("cut the cable of %s (netdev %s) on both guests", active, id)

	results(ctx, t, vms...)
}

// TestGuestVLAN: both guests put VLAN 100 on eth0 with addresses only on
// the VLAN link; traffic between them must be tagged to arrive.
func TestGuestVLAN(t *testing.T) {
	e := newEnv(t)
	w := e.segment(true)

	spec := func(name, addr, peerName, peer string) guestSpec {
		return guestSpec{
			Name: name, Check: checkVLAN, Modules: []string{"8021q"}, Link: "eth0.100", Peer: peer, PeerName: peerName,
			Config: machineConfig(fmt.Sprintf(`      - interface: eth0
        vlans:
          - vlanId: 100
            addresses: [%s/24]
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

// TestGuestWireGuard: both guests address eth0 on an underlay and run a
// WireGuard tunnel (keys made here) with each other as the only peer;
// traffic to the peer's tunnel address must cross it, with a handshake.
func TestGuestWireGuard(t *testing.T) {
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

	spec := func(i int) guestSpec {
		me, peer := i, 1-i

		return guestSpec{
			Name: fmt.Sprintf("node%d", me), Check: checkWireGuard, Modules: []string{"wireguard"}, Link: "wg0",
			Peer: fmt.Sprintf("10.200.0.%d", peer+1), PeerName: fmt.Sprintf("node%d", peer),
			Config: machineConfig(fmt.Sprintf(`      - interface: eth0
        addresses: [192.168.77.%d/24]
      - interface: wg0
        addresses: [10.200.0.%d/24]
        wireguard:
          privateKey: %s
          listenPort: 51820
          peers:
            - publicKey: %s
              endpoint: 192.168.77.%d:51820
              allowedIPs: [10.200.0.%d/32]
`, me+1, me+1, keys[me], keys[peer].PublicKey(), peer+1, peer+1)),
		}
	}

	vms := e.boot(
		node{spec: spec(0), nics: []qemu.NIC{{ID: "n0", MAC: qemu.MAC(0, 0), Backend: w.Backend()}}},
		node{spec: spec(1), nics: []qemu.NIC{{ID: "n0", MAC: qemu.MAC(1, 0), Backend: w.Backend()}}},
	)

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	results(ctx, t, vms...)
}

// TestGuestDummy: one guest, a dummy link with an address and nothing
// else. The dummy module is loaded with numdummies=0 so that the kernel
// makes no dummy0 of its own: networkd must create the link (it carries
// networkd's alias), bring it up and address it; the address then takes
// a local TCP connection and the rest of its prefix routes via the link.
func TestGuestDummy(t *testing.T) {
	e := newEnv(t)

	vms := e.boot(node{spec: guestSpec{
		Name: "node0", Check: checkDummy, Link: "dummy0", Addr: "10.9.99.1/24",
		Modules: []string{"dummy"}, ModuleParams: map[string][]string{"dummy": {"numdummies=0"}},
		Config: machineConfig(`      - interface: dummy0
        dummy: true
        addresses: [10.9.99.1/24]
`),
	}})

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	results(ctx, t, vms...)
}

// lacpNIC makes a virtio-net card report 1000 Mb/s full duplex. Without
// a known duplex (virtio-net's default) the bonding driver treats a
// member as half duplex and does not run LACP on it: each member stays
// an individual link in its own aggregator.
var lacpNIC = []string{"-global", "virtio-net-pci.speed=1000", "-global", "virtio-net-pci.duplex=full"}

// TestGuestBond8023ad: two guests bond eth0 and eth1 (on two separate
// segments) in 802.3ad with fast LACP, layer3+4 hashing and miimon. Both
// bonds must aggregate both members with each other (each one's LACP
// partner is the other's bond), carry traffic, and spread flows over
// both members.
func TestGuestBond8023ad(t *testing.T) {
	e := newEnv(t)
	w0, w1 := e.segment(true), e.segment(true)

	spec := func(name, addr, peerName, peer string) guestSpec {
		return guestSpec{
			Name: name, Check: checkLACP, Modules: []string{"bonding"}, Link: "bond0", Peer: peer, PeerName: peerName,
			Config: machineConfig(fmt.Sprintf(`      - interface: bond0
        addresses: [%s/24]
        bond:
          interfaces: [eth0, eth1]
          mode: 802.3ad
          lacpRate: fast
          xmitHashPolicy: layer3+4
          miimon: 100
`, addr)),
		}
	}

	vms := e.boot(
		node{spec: spec("node0", "10.11.0.1", "node1", "10.11.0.2"), extra: lacpNIC, nics: []qemu.NIC{
			{ID: "n0", MAC: qemu.MAC(0, 0), Backend: w0.Backend()}, {ID: "n1", MAC: qemu.MAC(0, 1), Backend: w1.Backend()},
		}},
		node{spec: spec("node1", "10.11.0.2", "node0", "10.11.0.1"), extra: lacpNIC, nics: []qemu.NIC{
			{ID: "n0", MAC: qemu.MAC(1, 0), Backend: w0.Backend()}, {ID: "n1", MAC: qemu.MAC(1, 1), Backend: w1.Backend()},
		}},
	)

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	results(ctx, t, vms...)

	// Each bond's LACP partner is the other bond, read on the other side.
	ready := waitAll(ctx, t, regexp.MustCompile(markPhase+` \S+ lacp-ready system=(\S+) partner=(\S+) `), vms...)

	for i := range ready {
		if sys, partner := ready[1-i][1], ready[i][2]; partner != sys {
			t.Errorf("guest %d's LACP partner is %s, but guest %d's bond is %s", i, partner, 1-i, sys)
		}
	}
}
