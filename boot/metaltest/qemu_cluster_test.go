//go:build e2e

package metaltest

// `talosctl cluster create qemu`: several metal nodes on one private
// segment, through the real binary, as a user runs it.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/provision/vm"
)

// vmCluster is one `cluster create qemu` under test.
type vmCluster struct {
	t     *testing.T
	bin   string
	name  string
	state string
	home  string
	cidr  netip.Prefix
}

// freeSegment finds a /24 no host interface uses (the Docker tests'
// networks and other clusters may be up).
func freeSegment(t *testing.T) netip.Prefix {
	t.Helper()

	for i := 200; i < 250; i++ {
		p := netip.MustParsePrefix(fmt.Sprintf("10.%d.7.0/24", i))

		err := vm.Preflight(p)
		if err == nil {
			return p
		}

		if !strings.Contains(err.Error(), "overlaps") {
			t.Fatalf("qemu clusters cannot run here: %v", err)
		}
	}

	t.Fatal("no free 10.x.7.0/24 for the segment")

	return netip.Prefix{}
}

// takenSubnet puts a free 10.x.8.0/24 on a link of its own for the test's
// duration and returns it.
func takenSubnet(t *testing.T) string {
	t.Helper()

	link := fmt.Sprintf("tbtaken%d", os.Getpid()%100000)

	for i := 200; i < 250; i++ {
		p := netip.MustParsePrefix(fmt.Sprintf("10.%d.8.0/24", i))
		if vm.Preflight(p) != nil {
			continue
		}

		for _, args := range [][]string{
			{"link", "add", link, "type", "bridge"},
			{"addr", "add", p.Addr().Next().String() + "/24", "dev", link},
			{"link", "set", link, "up"},
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v\n%s", args, err, out)
			}
		}

		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })

		return p.String()
	}

	t.Fatal("no free 10.x.8.0/24 for the taken subnet")

	return ""
}

func newVMCluster(t *testing.T) *vmCluster {
	t.Helper()

	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	if _, err := kernel(); err != nil {
		t.Fatalf("qemu clusters need a kernel: %v", err)
	}

	// Four guests: nothing else may boot meanwhile.
	release, err := qemu.Exclusive()
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(release)

	c := &vmCluster{t: t, bin: bin, name: fmt.Sprintf("mt%d", os.Getpid()%100000), state: t.TempDir(), home: t.TempDir(), cidr: freeSegment(t)}

	// Whatever happens, no guest, switch or tap outlives the test. On a
	// failure, the consoles tell why.
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpConsoles()
		}

		if vm.Exists(vm.Options{StateDir: c.state}, c.name) {
			if err := vm.Destroy(vm.Options{StateDir: c.state}, c.name, func(string) {}); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	return c
}

func (c *vmCluster) ip(i int) string {
	a := c.cidr.Addr().Next()
	for range i + 1 {
		a = a.Next()
	}

	return a.String()
}

func (c *vmCluster) consoles() []string {
	logs, _ := filepath.Glob(filepath.Join(c.state, c.name, "*", "console.log"))
	return logs
}

func (c *vmCluster) dumpConsoles() {
	for _, p := range c.consoles() {
		b, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")

		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}

		c.t.Logf("--- last lines of %s ---\n%s", p, strings.Join(lines, "\n"))
	}
}

// talosctl runs the real talosctl with the cluster's HOME (talosconfig)
// under a deadline.
func (c *vmCluster) talosctl(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, c.bin, append([]string{"talosctl"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "TALOSCONFIG=")

	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out

	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("talosctl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}

	return out.String(), err
}

func (c *vmCluster) ok(timeout time.Duration, args ...string) string {
	c.t.Helper()

	out, err := c.talosctl(timeout, args...)
	if err != nil {
		c.t.Fatal(err)
	}

	return out
}

// until retries check until it passes or timeout ends.
func (c *vmCluster) until(what string, timeout time.Duration, check func() error) {
	c.t.Helper()

	if err := waitUntil(timeout, nil, check); err != nil {
		c.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (c *vmCluster) stateArgs() []string { return []string{"--name", c.name, "--state", c.state} }

// TestQEMUCluster: three control planes and a worker, each a QEMU guest
// on one vde segment with the host at .1: they are configured over the
// segment, install to their disks an installer image the host serves,
// form etcd, discover each other, hold a shared IP the host reaches
// (cluster create --use-vip: the cluster's endpoint), lose the shared
// IP's holder to a reset (it comes back from its disk in maintenance
// mode) while an outside client keeps being served and take it back, take
// a rolling OS upgrade of the control planes (each reboots through the
// launcher into its disk's other slot, with its config read from STATE),
// and destroy leaves nothing.
func TestQEMUCluster(t *testing.T) {
	// The nodes install an installer image from the host and boot from
	// their disks: their OS is upgraded to v2 at the end. Pulled before
	// the guest lock is taken: they may still be building.
	inst := pull(t, upgradeInstallers)

	c := newVMCluster(t)
	vip := c.ip(48) // --use-vip's: the segment's .50

	k, _ := kernel()

	// The nodes carry the container runtime make images built, as a
	// user's do, so both containerd instances must come up on them.
	root, err := qemu.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}

	installFlags, v1 := c.installerRegistry(inst)

	create := append([]string{"cluster", "create", "qemu"}, c.stateArgs()...)
	create = append(create, installFlags...)
	create = append(create, "--subnet", c.cidr.String(), "--controlplanes", "3", "--workers", "1",
		"--cpus", "1", "--cpus-workers", "1", "--memory", "1024", "--memory-workers", "768",
		"--kernel-dir", filepath.Dir(filepath.Dir(k.Image)), "--images-dir", filepath.Join(root, "_out", "images"),
		// Four Kubernetes nodes do not fit two emulated CPUs: this test is
		// about the OS; TestQEMUKubernetes runs the kubelet.
		"--image-cache=false",
		// Every node gets wg0 and a peer for each node it can meet; the
		// guest kernel has WireGuard (the host's and Docker nodes' do not).
		"--wireguard-cidr", wireguardCIDR(c.cidr),
		"--use-vip", "--wait-timeout", "6m")

	start := time.Now()
	out := c.ok(8*time.Minute, create...)
	t.Logf("cluster create qemu (%s):\n%s", time.Since(start).Round(time.Millisecond), out)

	for _, want := range []string{
		"segment " + c.cidr.String() + " up: host " + c.cidr.Addr().Next().String(),
		"applied the worker config to " + c.name + "-worker-1",
		"waiting for etcd members to be control plane nodes: OK",
		"waiting for the shared IP to be held by exactly one control plane node: OK",
		"cluster \"" + c.name + "\" is healthy",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("create output lacks %q", want)
		}
	}

	for i := range 3 {
		if !strings.Contains(out, fmt.Sprintf("applied the controlplane config to %s-controlplane-%d (%s)", c.name, i+1, c.ip(i))) {
			t.Errorf("no config applied to control plane %d at %s", i+1, c.ip(i))
		}
	}

	// show: the segment and four running machines.
	show := c.ok(commandTimeout, append([]string{"cluster", "show"}, c.stateArgs()...)...)
	if !regexp.MustCompile(`PROVISIONER\s+qemu`).MatchString(show) || strings.Count(show, " running") != 4 {
		t.Errorf("cluster show:\n%s", show)
	}

	// Discovery across the segment: the worker sees every node once each
	// one has published (every 10 s), which health does not wait for.
	c.until("the worker's members to list every node", time.Minute, func() error {
		members, err := c.talosctl(commandTimeout, "-n", c.ip(3), "get", "members")
		if err != nil {
			return err
		}

		for _, h := range []string{"controlplane-1", "controlplane-2", "controlplane-3", "worker-1"} {
			if !strings.Contains(members, c.name+"-"+h) {
				return fmt.Errorf("no %s in\n%s", h, members)
			}
		}

		return nil
	})

	etcd := c.ok(commandTimeout, "-n", c.ip(0), "etcd", "members")
	for i := range 3 {
		if !strings.Contains(etcd, fmt.Sprintf("https://%s:2380", c.ip(i))) {
			t.Errorf("etcd members lack the peer URL of %s:\n%s", c.ip(i), etcd)
		}
	}

	// WireGuard carries traffic: control plane 1's apid reaches the
	// worker's apid at its wg0 address, which only wg0 routes (a peer's
	// allowed IPs are its /32 in the WireGuard CIDR).
	wgAddr := regexp.MustCompile(`wg0/(\d+\.\d+\.\d+\.\d+)/\d+`)

	var workerWG string

	c.until("the worker's wg0 address", time.Minute, func() error {
		addrs, err := c.talosctl(commandTimeout, "-n", c.ip(3), "get", "addresses")
		if err != nil {
			return err
		}

		m := wgAddr.FindStringSubmatch(addrs)
		if m == nil {
			return fmt.Errorf("no wg0 address on the worker:\n%s", addrs)
		}

		workerWG = m[1]

		return nil
	})

	c.until("the worker's apid through WireGuard", 2*time.Minute, func() error {
		v, err := c.talosctl(commandTimeout, "-e", c.ip(0), "-n", workerWG, "get", "hostname")
		if err != nil {
			return err
		}

		if !strings.Contains(v, c.name+"-worker-1") {
			return fmt.Errorf("the node at %s is not the worker:\n%s", workerWG, v)
		}

		return nil
	})

	// The host reaches the shared IP: an owner answered ARP on the segment.
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(vip, "50000"), 10*time.Second)
	if err != nil {
		t.Errorf("the shared IP %s from the host: %v", vip, err)
	} else {
		conn.Close()
	}

	// The node holding the shared endpoint is reset and takes its config
	// back; the others keep the endpoint served.
	if longest := c.resetHolderAndRejoin(vip, 3); longest > time.Minute {
		t.Errorf("the client through the shared IP was cut off for %s: more than a failover", longest)
	}

	c.ok(servicesTimeout+time.Minute, "health", "--wait-timeout", servicesTimeout.String())

	c.rollingUpgrade(3, v1, upgradeV2)

	// No node's kernel or machined reported trouble on any boot.
	for _, p := range c.consoles() {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}

		for _, l := range strings.Split(string(b), "\n") {
			switch trouble, noise := consoleTrouble(l); {
			case noise:
				t.Logf("%s: console line %q (known noise)", p, l)
			case trouble:
				t.Errorf("%s: console line %q", p, l)
			}
		}
	}

	// destroy: nothing left (machines, switch, tap, state).
	st, err := vm.Load(vm.Options{StateDir: c.state}, c.name)
	if err != nil {
		t.Fatal(err)
	}

	out = c.ok(time.Minute, append([]string{"cluster", "destroy"}, c.stateArgs()...)...)
	if !strings.Contains(out, "cluster \""+c.name+"\" destroyed") {
		t.Errorf("destroy output:\n%s", out)
	}

	for i := range st.Nodes {
		if st.Running(&st.Nodes[i]) {
			t.Errorf("node %s (pid %d) still runs after destroy", st.Nodes[i].Name, st.Nodes[i].PID)
		}
	}

	if _, err := net.InterfaceByName(st.Tap); err == nil {
		t.Errorf("tap %s outlived the cluster", st.Tap)
	}

	if _, err := os.Stat(st.Dir()); !os.IsNotExist(err) {
		t.Errorf("state directory %s: %v", st.Dir(), err)
	}
}

// wireguardCIDR is a /24 beside the segment's (10.x.7.0/24 gives
// 10.x.9.0/24), so that two test clusters never share one.
func wireguardCIDR(segment netip.Prefix) string {
	a := segment.Addr().As4()
	a[2] = 9

	return netip.PrefixFrom(netip.AddrFrom4(a), 24).String()
}

// TestQEMUClusterBadInput: refusals before anything is made.
func TestQEMUClusterBadInput(t *testing.T) {
	c := newVMCluster(t)

	// An interface of this host holds the subnet: a bridge the test owns,
	// not whichever interface exists (another package's Docker bridge may
	// vanish between the pick and the create).
	taken := takenSubnet(t)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"small disk", []string{"--disk", "1024"}, "too small for Talos's partitions"},
		{"bad cpus", []string{"--cpus", "zero"}, "want a positive number of CPUs"},
		{"no kernel", []string{"--kernel-dir", t.TempDir()}, "scripts/kernel.sh"},
		{"taken subnet", []string{"--subnet", taken}, "overlaps"},
		{"docker's image", []string{"--image", "talosbox:dev"}, "--image is for the docker provisioner"},
	} {
		args := append(append([]string{"cluster", "create", "qemu"}, c.stateArgs()...), "--subnet", c.cidr.String())
		args = append(args, tc.args...)

		out, err := c.talosctl(commandTimeout, args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: err %v, want an error with %q:\n%s", tc.name, err, tc.want, out)
		}

		if ents, _ := os.ReadDir(c.state); len(ents) != 0 {
			t.Errorf("%s: the state directory is not empty after a refusal", tc.name)
		}
	}
}
