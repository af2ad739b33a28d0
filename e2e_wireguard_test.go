//go:build e2e

package main

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// TestDockerWireGuard: cluster create --wireguard-cidr gives each Docker
// node its own wg0 (address, key pair, listen port, the mesh's peers), and
// networkd on each node turns it into a WireGuard link spec. Docker nodes
// share this machine's kernel, so the link itself exists only where the
// kernel has WireGuard; elsewhere create warns, and each node reports why
// it cannot make wg0.
func TestDockerWireGuard(t *testing.T) {
	// Asked of the kernel independently of the CLI's check: a link in a
	// network namespace that vanishes with the command.
	kernelWG := exec.Command("unshare", "--net", "ip", "link", "add", "wgprobe", "type", "wireguard").Run() == nil
	t.Logf("this machine's kernel has WireGuard: %v", kernelWG)

	bin := buildBinary(t)
	dc := newDockerCluster(t, bin)

	out := dc.ok("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(), "--controlplanes", "1", "--workers", "1",
		"--memory", "512", "--memory-workers", "256", "--wireguard-cidr", "10.1.0.0/24", "--wait-timeout", "3m")
	if warned := strings.Contains(out, "warning: --wireguard-cidr: this machine's kernel, which Docker nodes share, has no WireGuard"); warned == kernelWG {
		t.Fatalf("kernel has WireGuard: %v, but create warned: %v:\n%s", kernelWG, warned, out)
	}

	cp, w := dc.ip(0), dc.ip(1)
	spec := map[string]map[string]any{}
	pub := map[string]string{}

	for _, n := range []string{cp, w} {
		docs := jsonDocs(t, dc.ok("-n", n, "get", "linkspecs", "wg0", "-o", "json"))
		if len(docs) != 1 || docs[0].Spec["kind"] != "wireguard" || docs[0].Spec["logical"] != true {
			t.Fatalf("%s: want one logical wireguard link spec wg0, got %+v", n, docs)
		}

		spec[n] = docs[0].Spec

		key, err := wgtypes.ParseKey(fmt.Sprint(dig(spec[n], "wireguard", "privateKey")))
		if err != nil {
			t.Fatalf("%s: wg0 private key: %v", n, err)
		}

		pub[n] = key.PublicKey().String()
	}

	if pub[cp] == pub[w] {
		t.Fatal("both nodes have the same WireGuard key")
	}

	// The control plane listens and has the worker as a peer without an
	// endpoint; the worker calls the control plane at its node address.
	for _, tc := range []struct {
		node, port string
		peers      []string
	}{
		{cp, "51111", []string{fmt.Sprintf("map[allowedIPs:[10.1.0.3/32] persistentKeepalive:5s publicKey:%s]", pub[w])}},
		{w, "<nil>", []string{fmt.Sprintf("map[allowedIPs:[10.1.0.2/32] endpoint:%s:51111 persistentKeepalive:5s publicKey:%s]", cp, pub[cp])}},
	} {
		if port := fmt.Sprint(dig(spec[tc.node], "wireguard", "listenPort")); port != tc.port {
			t.Errorf("%s: wg0 listenPort %s, want %s", tc.node, port, tc.port)
		}

		peers, _ := dig(spec[tc.node], "wireguard", "peers").([]any)

		var got []string
		for _, p := range peers {
			got = append(got, fmt.Sprint(p))
		}

		if !slices.Equal(got, tc.peers) {
			t.Errorf("%s: wg0 peers\n%s\nwant\n%s", tc.node, strings.Join(got, "\n"), strings.Join(tc.peers, "\n"))
		}
	}

	for n, addr := range map[string]string{cp: "wg0/10.1.0.2/24", w: "wg0/10.1.0.3/24"} {
		if out := dc.ok("-n", n, "get", "addressspecs", addr); !strings.Contains(out, addr) {
			t.Errorf("%s: no address spec %s:\n%s", n, addr, out)
		}

		eventually(t, time.Minute, func() error {
			if kernelWG {
				return wireGuardUp(dc, n, addr)
			}

			return wireGuardRefused(dc, n)
		})
	}
}

// wireGuardUp: the kernel has the link and its address.
func wireGuardUp(dc *dockerCluster, node, addr string) error {
	out, code := dc.talosctl("-n", node, "get", "links", "wg0", "-o", "json")
	if code != 0 {
		return fmt.Errorf("%s: get links wg0: exit %d: %s", node, code, out)
	}

	if docs := jsonDocs(dc.t, out); len(docs) != 1 || docs[0].Spec["kind"] != "wireguard" {
		return fmt.Errorf("%s: wg0 is not a wireguard link:\n%s", node, out)
	}

	if out, _ := dc.talosctl("-n", node, "get", "addresses"); !strings.Contains(out, addr) {
		return fmt.Errorf("%s: no address %s:\n%s", node, addr, out)
	}

	return nil
}

// wireGuardRefused: networkd says why wg0 cannot be made.
func wireGuardRefused(dc *dockerCluster, node string) error {
	out, code := dc.talosctl("-n", node, "get", "applyissues", "-o", "json")
	if code != 0 {
		return fmt.Errorf("%s: get applyissues: exit %d: %s", node, code, out)
	}

	for _, d := range jsonDocs(dc.t, out) {
		if msg := fmt.Sprint(d.Spec["message"]); strings.Contains(msg, "wireguard link wg0") {
			return nil
		}
	}

	return fmt.Errorf("%s: no issue about wg0:\n%s", node, out)
}
