//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/testnet"
)

// TestE2ENetworkd: networkd runs inside machined, managing the node's own
// network namespace; its resources show in talosctl get, and a live
// config change through apply-config reaches the kernel.
func TestE2ENetworkd(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	ns := c.net.Hosts[0].NS

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "addresses"}, "eth0/" + nd.addr + "/24"},
		{[]string{"get", "links"}, "eth0"},
		{[]string{"get", "hostname"}, nd.name},
		{[]string{"get", "resolvers"}, "resolvers"},
		{[]string{"get", "netstatus"}, "status"},
		{[]string{"get", "routes"}, "inet4/10.5.0.1//"},
	} {
		out := c.ok(append([]string{"-n", nd.addr}, tt.args...)...)
		if !strings.Contains(out, tt.want) {
			t.Errorf("talosctl %s lacks %q:\n%s", strings.Join(tt.args, " "), tt.want, out)
		}
	}

	// The hostname and resolv.conf go to the node's own files, not the host's.
	etc := filepath.Join(c.dir, nd.name, "etc")
	if b, err := os.ReadFile(filepath.Join(etc, "hostname")); err != nil || strings.TrimSpace(string(b)) != nd.name {
		t.Errorf("node hostname file: %q %v", b, err)
	}

	if _, err := os.Stat(filepath.Join(etc, "resolv.conf")); err != nil {
		t.Errorf("resolv.conf not rendered into the node's etc: %v", err)
	}

	// A second address on eth0, applied live: networkd adds it to the kernel.
	patch := `[{"op":"add","path":"/machine/network/interfaces","value":[{"interface":"eth0","addresses":["10.5.0.200/24"]}]}]`
	c.ok("-n", nd.addr, "patch", "mc", "-m", "no-reboot", "-p", patch)

	deadline := time.Now().Add(10 * time.Second)

	for {
		out, err := testnet.Command(ns, "ip", "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
		if err == nil && strings.Contains(string(out), "10.5.0.200/24") {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("10.5.0.200/24 never reached the kernel:\n%s", out)
		}

		time.Sleep(20 * time.Millisecond)
	}

	if out := c.ok("-n", nd.addr, "get", "addresses"); !strings.Contains(out, "eth0/10.5.0.200/24") {
		t.Errorf("get addresses lacks the new address:\n%s", out)
	}
}
