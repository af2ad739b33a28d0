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
	t      *testing.T
	bin    string
	dir    string
	name   string
	subnet netip.Prefix
	docker *client.Client
}

const clusterLabel = "talosbox.cluster.name"

func newDockerCluster(t *testing.T, bin string) *dockerCluster {
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
func freeSubnet(t *testing.T, api *client.Client) netip.Prefix {
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
func objectsOf(t *testing.T, api *client.Client, name string) string {
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

	for _, want := range []string{"building image talosbox:", "container started: " + dc.name + "-controlplane-3", "waiting for all services to be up: OK", "is healthy"} {
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
