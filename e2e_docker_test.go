//go:build e2e

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// dockerCluster drives `talosctl cluster create|destroy|show` as a user
// does, through the real binary; Docker itself is checked through its SDK,
// independently of the provisioner under test.
type dockerCluster struct {
	t      testing.TB
	bin    string
	dir    string
	name   string
	subnet netip.Prefix
	docker *client.Client
}

const clusterLabel = "talosbox.cluster.name"

func newDockerCluster(t testing.TB, bin string) *dockerCluster {
	t.Helper()

	api, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { api.Close() })

	dc := &dockerCluster{t: t, bin: bin, dir: t.TempDir(), docker: api}
	dc.name = fmt.Sprintf("tbe2e-%06d", rand.IntN(1e6))
	dc.subnet = freeSubnet(t, api)

	t.Cleanup(func() {
		// Whatever a failed test left: the CLI's own destroy, then a check.
		if dc.objects() != "" {
			dc.talosctl("cluster", "destroy", "--name", dc.name)
		}
	})

	return dc
}

// freeSubnet picks a /24 that no Docker network overlaps.
func freeSubnet(t testing.TB, api *client.Client) netip.Prefix {
	t.Helper()

	nets, err := api.NetworkList(context.Background(), client.NetworkListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for range 100 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 216, byte(1 + rand.IntN(250)), 0}), 24)
		free := true

		for _, n := range nets.Items {
			for _, c := range n.IPAM.Config {
				if c.Subnet.IsValid() && c.Subnet.Overlaps(p) {
					free = false
				}
			}
		}

		if free {
			return p
		}
	}

	t.Fatal("no free /24 under 10.216.0.0/16")

	return netip.Prefix{}
}

func (dc *dockerCluster) env(extra ...string) []string {
	return append(os.Environ(), append([]string{"HOME=" + dc.dir, "TALOSCONFIG=" + filepath.Join(dc.dir, "talosconfig")}, extra...)...)
}

// talosctl runs the CLI and returns its combined output and exit code.
func (dc *dockerCluster) talosctl(args ...string) (string, int) {
	return dc.talosctlEnv(nil, args...)
}

func (dc *dockerCluster) talosctlEnv(env []string, args ...string) (string, int) {
	cmd := exec.Command(dc.bin, append([]string{"talosctl"}, args...)...)
	cmd.Env = dc.env(env...)

	out, err := cmd.CombinedOutput()
	code := 0

	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}

	return string(out), code
}

func (dc *dockerCluster) ok(args ...string) string {
	dc.t.Helper()

	out, code := dc.talosctl(args...)
	if code != 0 {
		dc.t.Fatalf("talosctl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}

	return out
}

// okIn is ok for a subtest: a failure ends t, not the whole cluster test.
func (dc *dockerCluster) okIn(t *testing.T, args ...string) string {
	t.Helper()

	out, code := dc.talosctl(args...)
	if code != 0 {
		t.Fatalf("talosctl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}

	return out
}

func (dc *dockerCluster) fails(args ...string) string {
	dc.t.Helper()

	out, code := dc.talosctl(args...)
	if code == 0 {
		dc.t.Fatalf("talosctl %s succeeded, want an error\n%s", strings.Join(args, " "), out)
	}

	return out
}

// objectsOf lists what Docker holds with the cluster label of name: "" when
// nothing.
func objectsOf(t testing.TB, api *client.Client, name string) string {
	t.Helper()

	ctx := context.Background()
	f := client.Filters{}.Add("label", clusterLabel+"="+name)

	var found []string

	cs, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range cs.Items {
		found = append(found, "container "+strings.Join(c.Names, ","))
	}

	ns, err := api.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}

	for _, n := range ns.Items {
		found = append(found, "network "+n.Name)
	}

	vs, err := api.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}

	for _, v := range vs.Items {
		found = append(found, "volume "+v.Name)
	}

	slices.Sort(found) // Docker lists in no fixed order

	return strings.Join(found, ", ")
}

func (dc *dockerCluster) objects() string { return objectsOf(dc.t, dc.docker, dc.name) }

// ip is the address of the i-th node (0-based) of the cluster's layout.
func (dc *dockerCluster) ip(i int) string {
	a := dc.subnet.Addr().Next()
	for range i + 1 {
		a = a.Next()
	}

	return a.String()
}

func TestDockerCluster(t *testing.T) {
	bin := buildBinary(t)
	dc := newDockerCluster(t, bin)

	out := dc.ok("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(),
		"--controlplanes", "3", "--workers", "1", "--memory", "512", "--memory-workers", "256", "--wait-timeout", "3m")

	for _, want := range []string{"building image talosbox:", "container started: " + dc.name + "-controlplane-3", "waiting for all services to be up: OK", "is healthy",
		"waiting for the shared IP to be held by exactly one control plane node: skipped (no shared IP in the control planes' configs)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("create output lacks %q:\n%s", want, out)
		}
	}

	cps, w := dc.ip(0)+","+dc.ip(1)+","+dc.ip(2), dc.ip(3)
	all := cps + "," + w

	t.Run("version on every node", func(t *testing.T) {
		out := dc.ok("-n", all, "version")
		for i := range 4 {
			if !strings.Contains(out, "NODE:        "+dc.ip(i)) {
				t.Fatalf("no version from %s:\n%s", dc.ip(i), out)
			}
		}
	})

	// One hostname everywhere: the container's, as Talos's container
	// platform gives it, in the hostname resource, members and etcd.
	t.Run("one hostname", func(t *testing.T) {
		want := dc.name + "-controlplane-1"
		if out := dc.ok("-n", dc.ip(0), "get", "hostname"); !regexpLine(out, `\s`+regexp.QuoteMeta(want)+`\s*$`) {
			t.Fatalf("get hostname does not say %s:\n%s", want, out)
		}

		if out := dc.ok("-n", dc.ip(3), "get", "members"); !strings.Contains(out, want) || !strings.Contains(out, dc.name+"-worker-1") || strings.Contains(out, "talos-") {
			t.Fatalf("members do not use the container hostnames:\n%s", out)
		}

		if out := dc.ok("-n", dc.ip(0), "etcd", "members"); !strings.Contains(out, want) {
			t.Fatalf("etcd members do not use the container hostname:\n%s", out)
		}
	})

	// health without node flags finds every node from the members and
	// runs etcd's checks too.
	t.Run("health discovers the cluster", func(t *testing.T) {
		waitFor(t, time.Minute, "the first node's members to list every node", func() error {
			if out := dc.ok("-n", dc.ip(0), "get", "members"); strings.Count(out, "   Member   ") != 4 {
				return fmt.Errorf("members:\n%s", out)
			}

			return nil
		})

		out := dc.ok("-n", dc.ip(0), "health", "--wait-timeout", "2m")
		for _, want := range []string{
			fmt.Sprintf(`discovered nodes: ["%s" "%s" "%s" "%s"]`, dc.ip(0), dc.ip(1), dc.ip(2), dc.ip(3)),
			"waiting for etcd to be healthy: OK", "waiting for etcd members to be control plane nodes: OK", "waiting for all services to be up: OK",
		} {
			if !strings.Contains(out, want) {
				t.Fatalf("health lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("show", func(t *testing.T) {
		out := dc.ok("cluster", "show", "--name", dc.name)
		for _, want := range []string{
			"NETWORK CIDR      " + dc.subnet.String(),
			dc.name + "-controlplane-1   controlplane   " + dc.ip(0) + "   2.00   536.9 MB   running",
			dc.name + "-worker-1         worker         " + dc.ip(3) + "   2.00   268.4 MB   running",
		} {
			if !strings.Contains(out, want) {
				t.Fatalf("show lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("name in use", func(t *testing.T) {
		before := dc.objects()
		out := dc.fails("cluster", "create", "--name", dc.name, "--subnet", freeSubnet(t, dc.docker).String(), "--wait=false")

		if !strings.Contains(out, "already") || !strings.Contains(out, dc.name) {
			t.Fatalf("no clear refusal:\n%s", out)
		}

		if after := dc.objects(); after != before {
			t.Fatalf("a refused create changed the cluster:\nbefore %s\nafter  %s", before, after)
		}
	})

	t.Run("overlapping subnet", func(t *testing.T) {
		other := dc.name + "-other"
		out := dc.fails("cluster", "create", "--name", other, "--subnet", dc.subnet.String(), "--wait=false")

		if !strings.Contains(out, "overlaps") {
			t.Fatalf("no clear refusal:\n%s", out)
		}

		if left := objectsOf(t, dc.docker, other); left != "" {
			t.Fatalf("a refused create left %s", left)
		}
	})

	t.Run("node loss", func(t *testing.T) {
		health := []string{"health", "--control-plane-nodes", cps, "--worker-nodes", w}
		victim := dc.name + "-controlplane-2"

		if _, err := dc.docker.ContainerStop(context.Background(), victim, client.ContainerStopOptions{}); err != nil {
			t.Fatal(err)
		}

		out := dc.fails(append(health, "--wait-timeout", "5s")...)
		if !strings.Contains(out, dc.ip(1)+":") {
			t.Fatalf("health does not name the stopped node %s:\n%s", dc.ip(1), out)
		}

		if _, err := dc.docker.ContainerStart(context.Background(), victim, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}

		dc.ok(append(health, "--wait-timeout", "2m")...)
	})

	start := time.Now()
	out = dc.ok("cluster", "destroy", "--name", dc.name)
	t.Logf("destroy took %s", time.Since(start))

	if !strings.Contains(out, "destroyed") {
		t.Fatalf("destroy output:\n%s", out)
	}

	if left := dc.objects(); left != "" {
		t.Fatalf("destroy left %s", left)
	}

	if out := dc.fails("cluster", "destroy", "--name", dc.name); !strings.Contains(out, "not found") {
		t.Fatalf("destroying a missing cluster:\n%s", out)
	}
}

func TestDockerClusterBadInput(t *testing.T) {
	bin := buildBinary(t)
	dc := newDockerCluster(t, bin)

	t.Run("engine unreachable", func(t *testing.T) {
		out, code := dc.talosctlEnv([]string{"DOCKER_HOST=unix://" + filepath.Join(dc.dir, "no-docker.sock")}, "cluster", "create", "--name", dc.name)
		if code == 0 || !strings.Contains(out, "cannot reach the Docker Engine") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("invalid config patch", func(t *testing.T) {
		out := dc.fails("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(),
			"--config-patch", `[{"op": "add", "path": "/machine/colour", "value": "red"}]`)
		if !strings.Contains(out, `unknown field "colour"`) {
			t.Fatalf("no clear error:\n%s", out)
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		for _, tc := range []struct{ args, want string }{
			{"--subnet 10.5.0.0/33", "--subnet"},
			{"--subnet 10.5.0.1/24", "network address"},
			{"--controlplanes 0", "at least 1"},
			{"--cpus lots", "--cpus"},
			{"--subnet 10.5.0.0/30 --controlplanes 3", "too small"},
			{"--image talosbox:does-not-exist", "not in the local image store"},
		} {
			out := dc.fails(append([]string{"cluster", "create", "--name", dc.name}, strings.Fields(tc.args)...)...)
			if !strings.Contains(out, tc.want) {
				t.Errorf("%s: want %q in:\n%s", tc.args, tc.want, out)
			}
		}
	})

	if left := dc.objects(); left != "" {
		t.Fatalf("refused creates left %s", left)
	}
}

// An interrupted create removes what it made.
func TestDockerClusterInterrupt(t *testing.T) {
	bin := buildBinary(t)
	dc := newDockerCluster(t, bin)

	cmd := exec.Command(bin, "talosctl", "cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(), "--controlplanes", "2", "--workers", "1")
	cmd.Env = dc.env()

	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var (
		mu  sync.Mutex
		log strings.Builder
	)

	started := make(chan struct{})

	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}

		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()

			if strings.Contains(sc.Text(), "container started: ") {
				once.Do(func() { close(started) })
			}
		}
	}()

	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatal("create never started a container")
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}

	err := cmd.Wait()
	pw.Close()

	mu.Lock()
	output := log.String()
	mu.Unlock()

	if err == nil {
		t.Fatalf("an interrupted create exited 0:\n%s", output)
	}

	if !strings.Contains(output, "rolling back") {
		t.Fatalf("no rollback reported:\n%s", output)
	}

	if left := dc.objects(); left != "" {
		t.Fatalf("interrupted create left %s\n%s", left, output)
	}
}

// etcd across three control-plane containers: refusals, snapshot and
// recovery, a graceful reset that leaves and rejoins, node loss, the
// shared IP's failover, a partition of the etcd leader, and discovery.
func TestDockerEtcd(t *testing.T) {
	bin := buildBinary(t)
	dc := newDockerCluster(t, bin)

	out := dc.ok("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(),
		"--controlplanes", "3", "--workers", "1", "--memory", "512", "--memory-workers", "256", "--wait-timeout", "3m",
		"--config-patch-control-plane", dc.vipPatch())
	if !strings.Contains(out, "waiting for the shared IP to be held by exactly one control plane node: OK") {
		t.Fatalf("health did not check the shared IP:\n%s", out)
	}

	cp1, cp3, w := dc.ip(0), dc.ip(2), dc.ip(3)
	cps := dc.ip(0) + "," + dc.ip(1) + "," + dc.ip(2)
	all := []string{dc.ip(0), dc.ip(1), dc.ip(2), dc.ip(3)}

	t.Run("get members on every node", func(t *testing.T) {
		for _, node := range all {
			eventually(t, time.Minute, func() error {
				out, code := dc.talosctl("-n", node, "get", "members")
				if code != 0 {
					return fmt.Errorf("%s", out)
				}

				for _, want := range []string{"controlplane-1", "controlplane-2", "controlplane-3", "worker-1"} {
					if !strings.Contains(out, dc.name+"-"+want) {
						return fmt.Errorf("%s does not list %s:\n%s", node, want, out)
					}
				}

				if !strings.Contains(out, "worker") || !strings.Contains(out, "talosbox (") {
					return fmt.Errorf("members lack machine type or OS:\n%s", out)
				}

				return nil
			})
		}

		out := dc.ok("-n", cp1, "get", "etcdmembers")
		if !strings.Contains(out, "local") {
			t.Fatalf("get etcdmembers:\n%s", out)
		}
	})

	members := func(node string) int {
		out, code := dc.talosctl("-n", node, "etcd", "members")
		if code != 0 {
			return -1
		}

		return strings.Count(out, "https://") / 2 // a peer and a client URL per member
	}

	t.Run("members", func(t *testing.T) {
		out := dc.ok("-n", cps, "etcd", "members")
		for i := 1; i <= 3; i++ {
			if !strings.Contains(out, fmt.Sprintf("%s-controlplane-%d", dc.name, i)) {
				t.Fatalf("member %d missing:\n%s", i, out)
			}
		}

		if strings.Contains(out, "true") {
			t.Fatalf("a learner is left:\n%s", out)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		if out := dc.fails("-n", cp1, "bootstrap"); !strings.Contains(out, "already bootstrapped") {
			t.Fatalf("second bootstrap:\n%s", out)
		}

		if out := dc.fails("-n", w, "bootstrap"); !strings.Contains(out, "control plane") {
			t.Fatalf("bootstrap on a worker:\n%s", out)
		}

		if out := dc.fails("-n", w, "etcd", "members"); !strings.Contains(out, "worker") {
			t.Fatalf("etcd members on a worker:\n%s", out)
		}
	})

	snapshot := filepath.Join(dc.dir, "db.snapshot")

	t.Run("snapshot", func(t *testing.T) {
		out := dc.ok("-n", cp1, "etcd", "snapshot", snapshot)
		if !strings.Contains(out, "etcd snapshot saved") {
			t.Fatalf("snapshot:\n%s", out)
		}

		if st, err := os.Stat(snapshot); err != nil || st.Size() == 0 || st.Mode().Perm() != 0o600 {
			t.Fatalf("snapshot file: %v %v", st, err)
		}
	})

	t.Run("graceful reset leaves and rejoins", func(t *testing.T) {
		memberID := func() string {
			for line := range strings.SplitSeq(dc.ok("-n", cp1, "etcd", "members"), "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[2] == dc.name+"-controlplane-3" {
					return f[1]
				}
			}

			return ""
		}

		before := memberID()
		dc.ok("-n", cp3, "reset", "--graceful", "--reboot", "--system-labels-to-wipe", "EPHEMERAL", "--wait")

		// It left, wiping its data, then came back as a new member that
		// joined as a learner and was promoted: 3 voters, a new ID.
		eventually(t, time.Minute, func() error {
			if n := members(cp1); n != 3 {
				return fmt.Errorf("%d members", n)
			}

			if id := memberID(); id == before || id == "" {
				return fmt.Errorf("cp3 is still member %s", before)
			}

			return nil
		})

		dc.ok("health", "--control-plane-nodes", cps, "--worker-nodes", w, "--wait-timeout", "2m")

		// Both talosbox's lines and etcd's own server log.
		if logs := dc.ok("-n", cp3, "logs", "etcd"); !strings.Contains(logs, "serving on") || !strings.Contains(logs, `"msg":"starting an etcd server"`) {
			t.Fatalf("cp3 etcd did not come back, or its server log is missing:\n%s", logs)
		}
	})

	t.Run("node loss", func(t *testing.T) {
		victim := dc.name + "-controlplane-2"
		if _, err := dc.docker.ContainerStop(context.Background(), victim, client.ContainerStopOptions{}); err != nil {
			t.Fatal(err)
		}

		// The two left keep a leader and a quorum: status answers with one,
		// and a write (an alarm disarm goes through raft) succeeds.
		out := dc.ok("-n", cp1+","+cp3, "etcd", "status")
		if strings.Count(out, "0000000000000000") > 0 {
			t.Fatalf("no leader after losing one of three:\n%s", out)
		}

		dc.ok("-n", cp1, "etcd", "alarm", "disarm")

		if _, err := dc.docker.ContainerStart(context.Background(), victim, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}

		dc.ok("health", "--control-plane-nodes", cps, "--worker-nodes", w, "--wait-timeout", "2m")
	})

	t.Run("shared IP failover", func(t *testing.T) {
		testVIPFailover(t, dc, all[:3])
	})

	t.Run("partition of the etcd leader", func(t *testing.T) {
		leader := etcdLeaderIP(t, dc, all[:3])
		if leader == "" {
			t.Fatal("no etcd leader")
		}

		var rest []string
		for _, n := range all {
			if n != leader {
				rest = append(rest, n)
			}
		}

		heal := partition(t, leader, rest)

		majority := slices.DeleteFunc(slices.Clone(all[:3]), func(n string) bool { return n == leader })

		// The majority elects a new leader and takes writes.
		eventually(t, time.Minute, func() error {
			if l := etcdLeaderIP(t, dc, majority); l == "" || l == leader {
				return fmt.Errorf("majority's leader is %q", l)
			}

			if out, code := dc.talosctl("-n", majority[0], "etcd", "alarm", "disarm"); code != 0 {
				return fmt.Errorf("write on the majority: %s", out)
			}

			return nil
		})

		// The old leader, alone, refuses writes (reached from the host).
		if out := dc.fails("-e", leader, "-n", leader, "etcd", "alarm", "disarm"); !strings.Contains(out, "etcd") {
			t.Fatalf("write on the minority:\n%s", out)
		}

		heal()
		dc.ok("health", "--control-plane-nodes", cps, "--worker-nodes", w, "--wait-timeout", "2m")
	})

	t.Run("recover on a fresh node", func(t *testing.T) {
		fresh := newDockerCluster(t, bin)
		fresh.dir = dc.dir // same talosconfig file, its own context
		fresh.ok("cluster", "create", "--name", fresh.name, "--subnet", fresh.subnet.String(), "--workers", "0", "--skip-bootstrap", "--wait=false")

		eventually(t, time.Minute, func() error {
			out, code := fresh.talosctl("-n", fresh.ip(0), "bootstrap", "--recover-from", snapshot)
			if code != 0 {
				return fmt.Errorf("%s", out)
			}

			return nil
		})

		fresh.ok("health", "--control-plane-nodes", fresh.ip(0), "--wait-timeout", "2m")

		out := fresh.ok("-n", fresh.ip(0), "etcd", "members")
		if !strings.Contains(out, fresh.name+"-controlplane-1") {
			t.Fatalf("recovered member:\n%s", out)
		}

		// The only member may not leave gracefully.
		if out := fresh.fails("-n", fresh.ip(0), "etcd", "leave"); !strings.Contains(out, "--graceful=false") {
			t.Fatalf("leave of the only member:\n%s", out)
		}

		fresh.ok("cluster", "destroy", "--name", fresh.name)
	})
}
