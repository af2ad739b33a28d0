//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// newCluster starts n control-plane nodes of one cluster. The talosconfig's
// endpoint is the first node.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()

	configured := make([]bool, n)
	for i := range configured {
		configured[i] = true
	}

	return newClusterOf(t, configured...)
}

// newClusterOf starts one node per entry: with its own control-plane
// config (hostname node-a, node-b, ...) when true, else with none, so that
// it waits in maintenance mode.
func newClusterOf(t *testing.T, configured ...bool) *cluster {
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
	c.net = testnet.New(t, len(configured))

	runBinary(t, c.bin, 0, "--install", c.links)
	runBinary(t, c.bin, 0, "talosctl", "gen", "config", "e2e", "https://10.5.0.2:6443", "-o", c.dir)

	c.tc = filepath.Join(c.dir, "talosconfig")
	runBinary(t, c.bin, 0, "talosctl", "--talosconfig", c.tc, "config", "endpoint", c.net.Hosts[0].Addr.String())

	for i, h := range c.net.Hosts {
		nd := &node{name: fmt.Sprintf("node-%c", 'a'+i), addr: h.Addr.String(), con: &console{more: make(chan struct{})}, done: make(chan struct{})}
		// --etcd=false: these nodes test the node and its API; etcd
		// clusters have their own tests in Docker (e2e_docker_test.go).
		args := []string{"--fork", "--kill-child", "--pid", "--mount", "--uts", "--ipc", "--mount-proc",
			filepath.Join(c.links, "init"), "--platform", "container", "--state-dir", filepath.Join(c.dir, nd.name), "--etcd=false", "--kubelet=false"}

		if configured[i] {
			cfg := c.nodeConfig(nd)
			args = append(args, "--config", cfg)
		}

		// --kill-child: if unshare dies, so does the node, and its output pipe closes.
		nd.cmd = testnet.Command(h.NS, "unshare", args...)
		c.start(nd)
		c.nodes = append(c.nodes, nd)
	}

	for i, nd := range c.nodes {
		if configured[i] {
			nd.con.wait(t, "[talos] services: ", 60*time.Second)
			continue
		}

		// apid logs to its service log, not the console: the maintenance
		// API answering is the sign it serves.
		nd.con.wait(t, "[talos] entering maintenance mode", 60*time.Second)
		eventually(t, 30*time.Second, func() error {
			out, errOut, code := c.talosctl("version", "--insecure", "-n", nd.addr)
			if code != 0 || !strings.Contains(out, "Mode:        maintenance") {
				return fmt.Errorf("maintenance API not served yet: %s%s", out, errOut)
			}

			return nil
		})
	}

	return c
}

// nodeConfig writes nd's config: the cluster's control-plane config with
// the node's hostname, in machine.network.hostname (the tests change it
// there): the generated HostnameConfig (auto: stable) goes, as Talos
// refuses both. It returns the path.
func (c *cluster) nodeConfig(nd *node) string {
	cfg := filepath.Join(c.dir, nd.name+".yaml")

	runBinary(c.t, c.bin, 0, "talosctl", "machineconfig", "patch", filepath.Join(c.dir, "controlplane.yaml"),
		"-p", fmt.Sprintf(`[{"op":"remove","path":"/HostnameConfig"},{"op":"add","path":"/machine/network","value":{"hostname":%q}}]`, nd.name), "-o", cfg)

	return cfg
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

// as returns the cluster seen from another (sub)test: helpers fail t.
func (c *cluster) as(t *testing.T) *cluster {
	cc := *c
	cc.t = t

	return &cc
}

// command is the real talosctl in the hub namespace, with the cluster's
// talosconfig unless args give another (the last --talosconfig wins).
func (c *cluster) command(env []string, args ...string) *exec.Cmd {
	cmd := testnet.Command(c.net.Hub, filepath.Join(c.links, "talosctl"), append([]string{"--talosconfig", c.tc}, args...)...)
	cmd.Env = append(os.Environ(), env...)

	return cmd
}

// talosctl runs the real talosctl in the hub namespace.
func (c *cluster) talosctl(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()

	return c.talosctlEnv(nil, args...)
}

// talosctlEnv runs talosctl with extra environment variables (KEY=value).
func (c *cluster) talosctlEnv(env []string, args ...string) (stdout, stderr string, code int) {
	c.t.Helper()

	cmd := c.command(env, args...)

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

// fails runs talosctl, fails the test unless it exits 1 with nothing on
// stdout, and returns stderr.
func (c *cluster) fails(args ...string) string {
	c.t.Helper()

	out, errOut, code := c.talosctl(args...)
	if code != 1 || out != "" {
		c.t.Fatalf("talosctl %s: exit %d (want 1), stdout %q, stderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}

	return errOut
}

// running is a talosctl command that streams (-f, -w, events): its
// stdout lines arrive on out as they are printed.
type running struct {
	cmd    *exec.Cmd
	out    *console
	stderr bytes.Buffer
	exited chan struct{} // closed once cmd.Wait returned; err is set
	err    error
}

// stream starts talosctl and returns at once; stop ends it.
func (c *cluster) stream(args ...string) *running {
	c.t.Helper()

	r := &running{cmd: c.command(nil, args...), out: &console{more: make(chan struct{})}, exited: make(chan struct{})}
	r.cmd.Stderr = &r.stderr

	pipe, err := r.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}

	if err := r.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}

	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			r.out.add(sc.Text())
		}

		r.err = r.cmd.Wait() // after the reads: Wait closes the pipe
		close(r.exited)
	}()

	c.t.Cleanup(func() {
		r.cmd.Process.Kill() //nolint:errcheck // gone already when stopped
		<-r.exited
	})

	return r
}

// stop interrupts the command as Ctrl-C would (ip netns exec execs
// talosctl, so the signal reaches it) and returns its stderr and exit
// status; -1 when it had to be killed.
func (r *running) stop() (stderr string, code int) {
	r.cmd.Process.Signal(os.Interrupt) //nolint:errcheck // may have exited already

	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill() //nolint:errcheck
		<-r.exited

		return r.stderr.String(), -1
	}

	code = 0

	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		code = ee.ExitCode()
	}

	return r.stderr.String(), code
}

// mark is how many lines the console holds: a point for waitAfter.
func (c *console) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()

	return len(c.lines)
}

// waitAfter is wait for lines after the first from: output of an event
// that happened after the mark was taken.
func (c *console) waitAfter(t *testing.T, from int, s string, timeout time.Duration) string {
	t.Helper()

	deadline := time.After(timeout)

	for i := from; ; {
		c.mu.Lock()
		for ; i < len(c.lines); i++ {
			if strings.Contains(c.lines[i], s) {
				line := c.lines[i]
				c.mu.Unlock()

				return line
			}
		}

		more := c.more
		c.mu.Unlock()

		select {
		case <-more:
		case <-deadline:
			t.Fatalf("timed out waiting for %q after line %d; output:\n%s", s, from, c.String())
		}
	}
}

// waitCount waits until n lines contain s.
func (c *console) waitCount(t *testing.T, s string, n int, timeout time.Duration) {
	t.Helper()

	from := 0

	for range n {
		line := c.waitAfter(t, from, s, timeout)
		from = c.indexAfter(from, line) + 1
	}
}

// indexAfter is the index of the first line at or after from equal to line.
func (c *console) indexAfter(from int, line string) int {
	c.mu.Lock()
	defer c.mu.Unlock()

	for i := from; i < len(c.lines); i++ {
		if c.lines[i] == line {
			return i
		}
	}

	return len(c.lines)
}

// eventually retries check until it returns nil or the deadline passes;
// for states with no output line to wait on (a service back up after a
// restart, seen through the API).
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()

	deadline := time.Now().Add(timeout)

	for {
		err := check()
		if err == nil {
			return
		}

		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s: %v", timeout, err)
		}

		time.Sleep(100 * time.Millisecond) // a poll interval, not synchronization: check decides
	}
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

	// Tables get a NODE column, rows in the order the nodes were given.
	tb := parseTable(t, c.ok("-e", a.addr, "-n", cc.addr+","+b.addr, "get", "machinestatus"), "NODE", "NAMESPACE", "TYPE", "ID", "VERSION", "STAGE", "READY")
	if nodes := tb.column("NODE"); !slices.Equal(nodes, []string{cc.addr, b.addr}) || !slices.Equal(tb.column("STAGE"), []string{"running", "running"}) {
		t.Errorf("get across nodes: %v", tb.rows)
	}

	// Streams prefix each line with its node.
	out = c.ok("-e", a.addr, "-n", b.addr+","+cc.addr, "logs", "machined", "--tail", "1")
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 2 || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, b.addr+": [talos] ") }) ||
		!slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, cc.addr+": [talos] ") }) {
		t.Errorf("logs across nodes:\n%s", out)
	}

	// A dry run on two nodes: each node's report, prefixed with it.
	out = c.ok("-e", a.addr, "-n", b.addr+","+cc.addr, "patch", "mc", "--dry-run", "-p", `[{"op":"add","path":"/machine/sysctls","value":{"net.core.somaxconn":"1024"}}]`)
	for _, nd := range []*node{b, cc} {
		if !strings.Contains(out, nd.addr+": Dry run summary:\n") || !strings.Contains(out, nd.addr+": + machine.sysctls.net.core.somaxconn: \"1024\"\n") {
			t.Errorf("dry run across nodes lacks %s's diff:\n%s", nd.addr, out)
		}
	}

	// A change on two nodes: each reports.
	out, errOut, code := c.talosctl("-e", a.addr, "-n", b.addr+","+cc.addr, "patch", "mc", "--immediate", "-p", `[{"op":"add","path":"/machine/sysctls","value":{"net.core.somaxconn":"2048"}}]`)
	if code != 0 || out != "patched mc at the node "+b.addr+"\npatched mc at the node "+cc.addr+"\n" ||
		errOut != "" {
		t.Errorf("patch on two nodes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// These nodes run no kubelet: health says it skips Kubernetes' checks.
	if out := c.ok("-e", a.addr, "-n", b.addr+","+cc.addr, "health"); out != fmt.Sprintf(`discovered nodes: ["%s" "%s"]
skipping etcd checks: no control plane node runs etcd
waiting for apid to be ready: OK
waiting for all nodes to finish boot sequence: OK
waiting for all services to be up: OK
skipping Kubernetes checks: no control plane node known
`, b.addr, cc.addr) {
		t.Errorf("health on two nodes:\n%s", out)
	}

	// One node down: its error is printed against it, the others answer,
	// and the exit status says something failed.
	c.crash(cc)

	for _, args := range [][]string{{"services"}, {"get", "machinestatus"}, {"logs", "machined", "--tail", "1"}} {
		out, errOut, code := c.talosctl(append([]string{"-e", a.addr, "-n", b.addr + "," + cc.addr}, args...)...)
		if code != 1 || !strings.Contains(out, b.addr) || strings.Contains(out, cc.addr) || !strings.HasPrefix(errOut, "error on node "+cc.addr+": ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v with %s down: exit %d\nstdout:\n%s\nstderr:\n%s", args, cc.addr, code, out, errOut)
		}
	}

	out, errOut, code = c.talosctl("-e", a.addr, "-n", b.addr+","+cc.addr, "version")
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

	// shutdown --wait through another node: B answers, stops, and its
	// process ends.
	_, errOut, code = c.talosctl("-e", a.addr, "-n", b.addr, "shutdown", "--wait", "--timeout", "1m")
	if code != 0 || !strings.HasSuffix(errOut, b.addr+": shut down\n") {
		t.Errorf("shutdown --wait: exit %d, %q", code, errOut)
	}

	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still runs after shutdown; console:\n%s", b.name, b.con)
	}

	b.con.wait(t, "[talos] machined stopped", time.Second)
}
