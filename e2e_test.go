package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/testnet"
)

// cluster is a set of real nodes, each the real binary as PID 1 of its own
// namespaces (network namespaces from testnet), with talosctl run from the
// hub namespace as a subprocess.
type cluster struct {
	t     *testing.T
	bin   string
	links string
	dir   string
	net   *testnet.Net
	nodes []*node
	tc    string // talosconfig
}

type node struct {
	name string
	addr string
	cmd  *exec.Cmd // unshare, whose child is the node's init
	init int       // the init's PID as the host sees it
	con  *console
	done chan struct{} // closed once the node's process tree is gone
}

// newCluster starts n control-plane nodes of one cluster.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()

	// A short directory: state dirs hold unix sockets, whose paths are
	// limited to 107 bytes, and t.TempDir() names are long.
	dir, err := os.MkdirTemp("", "tb")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(dir) })

	c := &cluster{t: t, bin: buildBinary(t), dir: dir}
	c.links = filepath.Join(c.dir, "bin")
	c.net = testnet.New(t, n)

	runBinary(t, c.bin, 0, "--install", c.links)
	runBinary(t, c.bin, 0, "talosctl", "gen", "config", "e2e", "https://10.5.0.2:6443", "-o", c.dir)

	c.tc = filepath.Join(c.dir, "talosconfig")

	for i, h := range c.net.Hosts {
		nd := &node{name: fmt.Sprintf("node-%c", 'a'+i), addr: h.Addr.String(), con: &console{more: make(chan struct{})}, done: make(chan struct{})}
		cfg := filepath.Join(c.dir, nd.name+".yaml")

		runBinary(t, c.bin, 0, "talosctl", "machineconfig", "patch", filepath.Join(c.dir, "controlplane.yaml"),
			"-p", fmt.Sprintf(`{"machine":{"network":{"hostname":%q}}}`, nd.name), "-o", cfg)

		// --kill-child: if unshare dies, so does the node, and its output pipe closes.
		nd.cmd = testnet.Command(h.NS, "unshare", "--fork", "--kill-child", "--pid", "--mount", "--uts", "--ipc", "--mount-proc",
			filepath.Join(c.links, "init"), "--platform", "container", "--state-dir", filepath.Join(c.dir, nd.name), "--config", cfg)
		c.start(nd)
		c.nodes = append(c.nodes, nd)
	}

	for _, nd := range c.nodes {
		nd.con.wait(t, "[talos] services: ", 60*time.Second)
	}

	return c
}

func (c *cluster) start(nd *node) {
	out, err := nd.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}

	nd.cmd.Stderr = nd.cmd.Stdout

	if err := nd.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}

	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			nd.con.add(sc.Text())
		}

		nd.cmd.Wait() //nolint:errcheck // killed nodes exit non-zero
		close(nd.done)
	}()

	nd.init = waitPID(c.t, nd.name+"'s init", func() int { return childOf(nd.cmd.Process.Pid, "") })

	c.t.Cleanup(func() {
		nd.cmd.Process.Kill() //nolint:errcheck // gone already when stopped

		select {
		case <-nd.done:
		case <-time.After(30 * time.Second):
			c.t.Errorf("%s did not go away", nd.name)
		}
	})
}

// crash kills a node's init with SIGKILL, as a power cut would, and waits
// for it to be gone.
func (c *cluster) crash(nd *node) {
	c.t.Helper()

	if err := syscall.Kill(nd.init, syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}

	select {
	case <-nd.done:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s did not stop", nd.name)
	}
}

// talosctl runs the real talosctl in the hub namespace.
func (c *cluster) talosctl(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()

	cmd := testnet.Command(c.net.Hub, filepath.Join(c.links, "talosctl"), append([]string{"--talosconfig", c.tc}, args...)...)

	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e

	err := cmd.Run()

	var ee *exec.ExitError

	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		c.t.Fatalf("talosctl %v: %v", args, err)
	}

	return o.String(), e.String(), code
}

// ok runs talosctl and fails the test unless it exits 0.
func (c *cluster) ok(args ...string) string {
	c.t.Helper()

	out, errOut, code := c.talosctl(args...)
	if code != 0 {
		c.t.Fatalf("talosctl %s exited %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
	}

	return out
}

func TestAPIRoutingAcrossNodes(t *testing.T) {
	c := newCluster(t, 3)
	a, b, cc := c.nodes[0], c.nodes[1], c.nodes[2]

	// Through node A's apid to B and C: each row comes from the node named.
	out := c.ok("-e", a.addr, "-n", b.addr+","+cc.addr, "version")
	for _, nd := range []*node{b, cc} {
		if !strings.Contains(out, "NODE:        "+nd.addr) {
			t.Errorf("version output lacks %s:\n%s", nd.addr, out)
		}
	}

	out = c.ok("-e", a.addr, "-n", b.addr+","+cc.addr, "services")
	if !strings.HasPrefix(out, "NODE") || strings.Count(out, "machined") != 2 || !strings.Contains(out, b.addr) || !strings.Contains(out, cc.addr) {
		t.Errorf("services across nodes:\n%s", out)
	}

	// One node down: its error is printed against it, the others answer,
	// and the exit status says something failed.
	c.crash(cc)

	out, errOut, code := c.talosctl("-e", a.addr, "-n", b.addr+","+cc.addr, "version")
	if code == 0 {
		t.Errorf("exit 0 with a node down:\n%s%s", out, errOut)
	}

	if !strings.Contains(out, "NODE:        "+b.addr) {
		t.Errorf("the live node did not answer:\n%s", out)
	}

	if !strings.Contains(errOut, cc.addr) {
		t.Errorf("no error printed against %s:\n%s", cc.addr, errOut)
	}

	// The endpoint list fails over: a dead first endpoint, then a live one.
	out = c.ok("-e", cc.addr+","+a.addr, "-n", a.addr, "version")
	if !strings.Contains(out, "NODE:        "+a.addr) {
		t.Errorf("no failover to the second endpoint:\n%s", out)
	}
}
