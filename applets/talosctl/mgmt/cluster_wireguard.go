package mgmt

import (
	"fmt"
	"io"
	"net/netip"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/provision"
)

// The WireGuard mesh of `cluster create --wireguard-cidr`, as Talos's
// provisioners lay it out: control planes are the servers, listening on
// wireguardPort at their node address; every node has every control plane
// as a peer, and control planes also have the workers as peers without an
// endpoint, since a worker listens on no fixed port and is only reached
// once it has called in. The keepalive keeps that path open through NAT
// and conntrack, so control planes can reach workers at any time.
const (
	wireguardLink      = "wg0"
	wireguardPort      = 51111
	wireguardKeepalive = 5 * time.Second
)

// checkWireguardCIDR validates --wireguard-cidr for a cluster of n nodes
// on subnet. Nodes take addresses from the second host address on, as they
// do on --subnet (Talos's layout: the first one is left free).
func checkWireguardCIDR(s string, subnet netip.Prefix, n int) (netip.Prefix, error) {
	cidr, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("--wireguard-cidr %q: %w", s, err)
	}

	a := cidr.Addr()

	switch {
	case a.Is4In6():
		return netip.Prefix{}, fmt.Errorf("--wireguard-cidr %s: an IPv4-mapped IPv6 network: write it as IPv4", cidr)
	case cidr != cidr.Masked():
		return netip.Prefix{}, fmt.Errorf("--wireguard-cidr %s: want a network address such as %s", cidr, cidr.Masked())
	case a.IsLoopback() || a.IsMulticast() || a.IsLinkLocalUnicast() || a.IsUnspecified():
		return netip.Prefix{}, fmt.Errorf("--wireguard-cidr %s: want a unicast network for node addresses (not loopback, multicast, link-local or unspecified)", cidr)
	}

	// Node traffic and the tunnel must not share addresses: the tunnel's
	// routes would capture the traffic that carries it.
	reserved := []struct{ what, cidr string }{
		{"--subnet", subnet.String()},
		{"the pod network", constants.DefaultPodSubnet},
		{"the service network", constants.DefaultServiceSubnet},
	}

	for _, r := range reserved {
		if other := netip.MustParsePrefix(r.cidr); cidr.Overlaps(other) {
			return netip.Prefix{}, fmt.Errorf("--wireguard-cidr %s overlaps %s %s", cidr, r.what, other)
		}
	}

	// The last node's address, network+n+1, and one more (IPv4's
	// broadcast address) must fit.
	ip := cidr.Addr()
	for range n + 2 {
		ip = ip.Next()
	}

	if !cidr.Contains(ip) {
		return netip.Prefix{}, fmt.Errorf("--wireguard-cidr %s is too small for %d nodes: they take addresses from the second host address on", cidr, n)
	}

	return cidr, nil
}

// wireguardDevices makes a key pair per node and returns each node's wg0,
// in the order of nodes.
func wireguardDevices(cidr netip.Prefix, nodes []nodePlan) ([]*configs.Device, error) {
	type member struct {
		key  wgtypes.Key
		addr netip.Addr
		cp   bool
		ip   netip.Addr
	}

	members := make([]member, len(nodes))
	addr := cidr.Addr().Next()

	for i, n := range nodes {
		key, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			return nil, fmt.Errorf("generate a WireGuard key for %s: %w", n.name, err)
		}

		addr = addr.Next()
		members[i] = member{key: key, addr: addr, cp: n.typ == provision.TypeControlPlane, ip: n.ip}
	}

	devs := make([]*configs.Device, len(nodes))

	for i, self := range members {
		wg := &configs.WireGuardConfig{PrivateKey: self.key.String()}
		if self.cp {
			wg.ListenPort = wireguardPort
		}

		for j, peer := range members {
			if j == i || (!peer.cp && !self.cp) {
				// Two workers have neither an endpoint nor a fixed port
				// for each other: they could never meet.
				continue
			}

			p := configs.WireGuardPeer{
				PublicKey:                   peer.key.PublicKey().String(),
				PersistentKeepaliveInterval: wireguardKeepalive,
				AllowedIPs:                  []string{netip.PrefixFrom(peer.addr, peer.addr.BitLen()).String()},
			}
			if peer.cp {
				p.Endpoint = netip.AddrPortFrom(peer.ip, wireguardPort).String()
			}

			wg.Peers = append(wg.Peers, p)
		}

		// The MTU stays the kernel's WireGuard default (1420), which
		// leaves room for the encapsulation on a 1500-byte underlay.
		devs[i] = &configs.Device{
			Interface: wireguardLink,
			Addresses: []string{netip.PrefixFrom(self.addr, cidr.Bits()).String()},
			WireGuard: wg,
		}
	}

	return devs, nil
}

// withDevice merges dev into a node's config as a strategic merge patch,
// as Talos does, so a wg0 from the user's patches keeps what ours does not
// set; the result is validated like any patched config.
func withDevice(doc []byte, dev *configs.Device) ([]byte, error) {
	patch, err := yaml.Marshal(map[string]any{"machine": map[string]any{"network": map[string]any{"interfaces": []*configs.Device{dev}}}})
	if err != nil {
		return nil, fmt.Errorf("encode the %s patch: %w", dev.Interface, err)
	}

	patches, err := configpatch.Parse(patch)
	if err != nil {
		return nil, fmt.Errorf("the %s patch: %w", dev.Interface, err)
	}

	return applyPatches(doc, patches)
}

// warnNoWireGuard says so when Docker nodes, which share this machine's
// kernel, cannot have WireGuard links: the configs still carry wg0, and
// networkd reports the failed link as an ApplyIssue on each node.
func warnNoWireGuard(out io.Writer) {
	err := kernelWireGuard()
	if err == nil {
		return
	}

	fmt.Fprintf(out, "warning: --wireguard-cidr: this machine's kernel, which Docker nodes share, has no WireGuard (%v): the configs carry %s, but the nodes cannot create it ('talosctl get applyissues' shows why)\n", err, wireguardLink)
}

// wireguardFamily is the kernel's WireGuard generic netlink family
// (WG_GENL_NAME).
const wireguardFamily = "wireguard"

// kernelWireGuard asks the kernel for its WireGuard generic netlink
// family; the kernel loads the module for the request when it can.
func kernelWireGuard() error {
	if err := genlFamily(wireguardFamily); err != nil {
		return fmt.Errorf("no %q generic netlink family: %w", wireguardFamily, err)
	}

	return nil
}
