//go:build e2e

package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/testnet"
)

// loopbackOnlyNS makes a network namespace with nothing but lo, up.
func loopbackOnlyNS(t *testing.T) string {
	t.Helper()

	id := make([]byte, 3)
	rand.Read(id) //nolint:errcheck // never fails

	ns := "tblo-" + hex.EncodeToString(id)

	for _, args := range [][]string{{"netns", "add", ns}, {"-n", ns, "link", "set", "lo", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}

	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() }) //nolint:errcheck // best effort

	return ns
}

// TestBootstrapWithoutAddressFailsFast: a control plane whose only
// address is loopback cannot start etcd (it has nothing to advertise to
// its peers); `talosctl bootstrap` says so at once instead of hanging
// until the client gives up.
func TestBootstrapWithoutAddressFailsFast(t *testing.T) {
	dir, err := os.MkdirTemp("", "tb") // short: the state dir holds unix sockets
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(dir) })

	c := &cluster{t: t, bin: buildBinary(t), dir: dir, net: &testnet.Net{Hub: loopbackOnlyNS(t)}}
	c.links = filepath.Join(dir, "bin")
	c.tc = filepath.Join(dir, "talosconfig")

	runBinary(t, c.bin, 0, "--install", c.links)
	runBinary(t, c.bin, 0, "talosctl", "gen", "config", "e2e", "https://127.0.0.1:6443", "-o", dir)
	runBinary(t, c.bin, 0, "talosctl", "--talosconfig", c.tc, "config", "endpoint", "127.0.0.1")

	nd := &node{name: "node-a", addr: "127.0.0.1", con: &console{more: make(chan struct{})}, done: make(chan struct{})}
	nd.cmd = testnet.Command(c.net.Hub, "unshare", "--fork", "--kill-child", "--pid", "--mount", "--uts", "--ipc", "--mount-proc",
		filepath.Join(c.links, "init"), "--platform", "container", "--state-dir", filepath.Join(dir, nd.name), "--kubelet=false", "--config", c.nodeConfig(nd))
	c.start(nd)
	nd.con.wait(t, "[talos] services: ", 2*time.Minute)

	// The client's own deadline is far beyond what the answer may take:
	// a hang shows as the kill, not as a slow pass.
	cmd := c.command(nil, "-n", "127.0.0.1", "bootstrap")

	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out

	start := time.Now()

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	kill := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() }) //nolint:errcheck // gone already when it answered
	err = cmd.Wait()
	kill.Stop()

	took := time.Since(start)
	t.Logf("bootstrap answered in %s: %s", took, out.String())

	if err == nil || !strings.Contains(out.String(), "etcd cannot be bootstrapped yet: the node has no address but loopback") {
		t.Fatalf("bootstrap on a node without an address: %v\n%s", err, out.String())
	}

	if took > 15*time.Second {
		t.Fatalf("bootstrap took %s to refuse", took)
	}
}
