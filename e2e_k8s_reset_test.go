//go:build e2e

package main

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/availability"
	"github.com/talosbox/talosbox/internal/render"
)

// Issue 31's reset scenarios on TestDockerKubernetes's cluster.

// testEphemeralWipe resets the worker with EPHEMERAL alone wiped and a
// reboot: its pods' containers, its images and its kubelet certificate
// go, and it rejoins with fresh ones, STATE (its config) kept.
func testEphemeralWipe(t *testing.T, dc *dockerCluster, w, name string) {
	containersBefore := podContainers(t, dc, name)
	certBefore := kubeletClientSerial(t, dc, w)

	if len(containersBefore) == 0 || certBefore == "" {
		t.Fatalf("before the wipe: pod containers %v, kubelet client certificate %q", containersBefore, certBefore)
	}

	dc.ok("-n", w, "reset", "--system-labels-to-wipe", "EPHEMERAL", "--reboot", "--graceful=false")

	// The reset runs after the command returns: its log line comes first.
	var logs string

	waitFor(t, 3*time.Minute, "the wipe in "+name+"'s log", func() error {
		out, code := dc.talosctl("-n", w, "logs", "machined")
		if code != 0 || !strings.Contains(out, "[talos] wiped EPHEMERAL") {
			return fmt.Errorf("logs machined (exit %d): no wipe yet", code)
		}

		logs = out

		return nil
	})

	var certAfter string

	waitFor(t, 8*time.Minute, name+" Ready again with a new kubelet client certificate", func() error {
		if certAfter = kubeletClientSerial(t, dc, w); certAfter == "" || certAfter == certBefore {
			return fmt.Errorf("the kubelet's client certificate: serial %q, before %s", certAfter, certBefore)
		}

		out, err := dc.kubectl("get", "node", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || out != "True" {
			return fmt.Errorf("Ready = %q (%v)", out, err)
		}

		return nil
	})

	line := grepLines(logs, "[talos] wiped EPHEMERAL")

	for _, want := range []string{"(/var: removed ", "lib/containerd", "lib/kubelet", "log/pods"} {
		if !strings.Contains(line, want) {
			t.Errorf("the wipe's log line lacks %q: %q", want, line)
		}
	}

	if strings.Contains(logs, "[talos] wiped STATE") {
		t.Error("STATE wiped too")
	}

	// Every container the node's pods run now is new: containerd's store
	// started empty, and the images came again from the registry.
	waitFor(t, 4*time.Minute, "the DaemonSet pods running again on "+name, func() error {
		after := podContainers(t, dc, name)
		if len(after) == 0 {
			return fmt.Errorf("no pod containers on %s yet", name)
		}

		for _, c := range after {
			if slices.Contains(containersBefore, c) {
				return fmt.Errorf("container %s survived the wipe", c)
			}
		}

		return nil
	})
}

// podContainers lists the container IDs of the pods Kubernetes has on a
// node (kube-proxy and flannel's on any node).
func podContainers(t *testing.T, dc *dockerCluster, node string) []string {
	t.Helper()

	out, err := dc.kubectl("get", "pods", "-A", "--field-selector", "spec.nodeName="+node, "-o", `jsonpath={range .items[*]}{.status.containerStatuses[*].containerID}{" "}{end}`)
	if err != nil {
		t.Fatalf("pods on %s: %v: %s", node, err, out)
	}

	return strings.Fields(out)
}

// kubeletClientSerial reads the kubelet's client certificate on a node
// (talosctl read) and returns its serial number, "" while there is none.
func kubeletClientSerial(t *testing.T, dc *dockerCluster, node string) string {
	t.Helper()

	out, code := dc.talosctl("-n", node, "read", "/var/lib/kubelet/pki/kubelet-client-current.pem")
	if code != 0 {
		return ""
	}

	for rest := []byte(out); ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return ""
		}

		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatalf("the kubelet's client certificate on %s: %v", node, err)
			}

			return c.SerialNumber.String()
		}
	}
}

// testResetLeavesNothingRunning checks a node just reset without a
// reboot: no pod, container or shim outlives machined's services, and
// what the kubelet, containerd and etcd kept in /var is gone.
func testResetLeavesNothingRunning(t *testing.T, dc *dockerCluster, ip string) {
	container := dc.containerOf(ip)

	ins, err := dc.docker.ContainerInspect(context.Background(), container, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}

	root := fmt.Sprintf("/proc/%d/root", ins.Container.State.Pid)

	waitFor(t, 2*time.Minute, "nothing but machined running in "+container+", and /var wiped", func() error {
		if left := nodeProcesses(t, dc, container); len(left) > 0 {
			return fmt.Errorf("still running: %v", left)
		}

		for _, dir := range []string{"/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods", "/var/lib/talosbox/ephemeral/lib/etcd"} {
			if _, err := os.Stat(filepath.Join(root, dir)); err == nil {
				return fmt.Errorf("%s still there", dir)
			}
		}

		return nil
	})
}

// testReaderSeesNoSecret lists every resource type and reads each as
// os:reader from the nodes given: no secret of the control plane's config
// (a key, a token, the bootstrap token's secret half, an encryption
// secret) appears in any of them.
func testReaderSeesNoSecret(t *testing.T, dc *dockerCluster, cp string, nodes ...string) {
	data := dc.ok("-n", cp, "read", "/var/lib/talosbox/state/config.yaml")

	cfg, err := configs.Decode([]byte(data))
	if err != nil {
		t.Fatalf("the control plane's config: %v", err)
	}

	secrets := slices.DeleteFunc(render.Secrets(cfg), func(s string) bool { return len(s) < 8 })
	if len(secrets) < 10 {
		t.Fatalf("only %d secrets in the control plane's config", len(secrets))
	}

	reader := filepath.Join(t.TempDir(), "reader-talosconfig")
	if out, code := dc.talosctl("config", "new", reader, "--roles", "os:reader"); code != 0 {
		t.Fatalf("config new: %s", out)
	}

	types := strings.Fields(dc.ok("-n", cp, "get", "rd", "-o", "jsonpath={.spec.type}"))
	if len(types) < 40 {
		t.Fatalf("only %d resource types: %v", len(types), types)
	}

	for _, n := range nodes {
		for _, typ := range types {
			out, code := dc.talosctl("--talosconfig", reader, "-n", n, "get", typ, "-o", "yaml")
			if code != 0 {
				t.Errorf("get %s on %s as a reader: %s", typ, n, out)
				continue
			}

			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("a reader sees a secret of the config (%.6s...) in %s on %s", s, typ, n)
				}
			}
		}
	}
}

// testEndpointLoss resets the first control plane of a cluster created
// with --use-vip (the node talosctl cluster create made the endpoint
// before), gives it its config back in maintenance mode, and waits for it
// to rejoin etcd and Kubernetes. Meanwhile an outside client asks the API
// server's /readyz through the shared IP every half second, and the
// worker's Ready condition is sampled: the client may miss the shared IP's
// failover, never more, and the worker never goes NotReady.
func testEndpointLoss(t *testing.T, dc *dockerCluster, names map[string]string, cp1, cp2, w string) {
	config := dc.ok("-e", cp1, "-n", cp1, "read", "/var/lib/talosbox/state/config.yaml")
	path := filepath.Join(t.TempDir(), "cp1.yaml")

	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	// Which node answers for the shared IP: its MAC in this machine's
	// neighbour table, by container.
	macs := map[string]string{}

	for _, ip := range []string{cp1, cp2, dc.ip(2)} {
		ins, err := dc.docker.ContainerInspect(context.Background(), dc.containerOf(ip), client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}

		for _, ep := range ins.Container.NetworkSettings.Networks {
			macs[ep.MacAddress.String()] = ip
		}
	}

	vipHolder := func() string {
		out, _ := exec.Command("ip", "neigh", "show", sharedIP(dc)).Output()
		if f := strings.Fields(string(out)); slices.Contains(f, "lladdr") {
			mac := f[slices.Index(f, "lladdr")+1]
			return cmp.Or(macs[mac], mac)
		}

		return strings.TrimSpace(string(out))
	}

	// The worker's Ready condition is sampled with each probe: the probe
	// runs in the sampler's goroutine, read after Stop.
	type readiness struct {
		at    time.Time
		ready bool
	}

	var ready []readiness

	sampler := availability.Start(500*time.Millisecond, func() (bool, string) {
		out, err := dc.kubectl("get", "--raw", "/readyz", "--request-timeout", "2s")
		st, _ := dc.kubectl("get", "node", names[w], "--request-timeout", "2s", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		ready = append(ready, readiness{at: time.Now(), ready: st != "False"})

		if err == nil && strings.TrimSpace(out) == "ok" {
			return true, ""
		}

		return false, fmt.Sprintf("%q via %s", availability.LastLine(out), vipHolder())
	})

	start := time.Now()
	dc.ok("-e", cp1, "-n", cp1, "reset", "--graceful", "--reboot")

	waitFor(t, 5*time.Minute, names[cp1]+" in maintenance mode, taking its config back", func() error {
		if out, code := dc.talosctl("apply-config", "--insecure", "-e", cp1, "-n", cp1, "-f", path); code != 0 {
			return fmt.Errorf("apply-config --insecure: %s", out)
		}

		return nil
	})

	waitFor(t, 10*time.Minute, names[cp1]+" back in etcd and Ready", func() error {
		out, code := dc.talosctl("-e", cp2, "-n", cp2, "etcd", "members")
		if code != 0 || !strings.Contains(out, cp1) || strings.Count(out, "https://") < 3 {
			return fmt.Errorf("etcd members:\n%s", out)
		}

		st, err := dc.kubectl("get", "node", names[cp1], "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || st != "True" {
			return fmt.Errorf("%s Ready = %q (%v)", names[cp1], st, err)
		}

		return nil
	})

	rejoined := time.Since(start)

	// The sampler goes on until the client is served again (a rejoin may
	// move the shared IP or change etcd's membership at its last moment).
	waitFor(t, 2*time.Minute, "the client served through the shared IP after the rejoin", func() error {
		out, err := dc.kubectl("get", "--raw", "/readyz", "--request-timeout", "2s")
		if err != nil || strings.TrimSpace(out) != "ok" {
			return fmt.Errorf("/readyz: %q (%v)", out, err)
		}

		return nil
	})

	res := sampler.Report(start, t.Logf)

	var notReady time.Duration

	for i := 1; i < len(ready); i++ {
		if !ready[i].ready {
			notReady += ready[i].at.Sub(ready[i-1].at)
		}
	}

	t.Logf("first control plane reset and rejoined in %s; %d samples: the client's outages through the shared IP (since the reset + length) %s, longest %s; the worker NotReady for %s",
		rejoined.Round(time.Second), len(res.Samples), availability.Describe(res.Outages, start), res.Longest.Round(100*time.Millisecond), notReady.Round(100*time.Millisecond))

	if res.Longest > 30*time.Second {
		t.Errorf("the client through the shared IP was cut off for %s: more than a failover", res.Longest)
	}

	if notReady > 0 {
		t.Errorf("the worker went NotReady for %s while other control planes served", notReady)
	}
}

// sharedIP is cluster create --use-vip's shared IP: the subnet's 50th
// address.
func sharedIP(dc *dockerCluster) string {
	a := dc.subnet.Masked().Addr()
	for range 50 {
		a = a.Next()
	}

	return a.String()
}

// killInNode SIGKILLs the process named comm inside the node container,
// so that the same program in another node is never touched.
func killInNode(t *testing.T, dc *dockerCluster, container, comm string) {
	t.Helper()

	for pid, name := range nodeProcesses(t, dc, container) {
		if name == comm {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}

			return
		}
	}

	t.Fatalf("no %s in %s", comm, container)
}

// nodeProcesses maps the processes of a node's container other than its
// PID 1 (machined) to their names: found on this machine's /proc as
// descendants of the container's init.
func nodeProcesses(t *testing.T, dc *dockerCluster, container string) map[int]string {
	t.Helper()

	ins, err := dc.docker.ContainerInspect(context.Background(), container, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}

	init := ins.Container.State.Pid

	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}

	procs := map[int]string{}

	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == init {
			continue
		}

		for p := parentPID(pid); p > 1; p = parentPID(p) {
			if p == init {
				c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				procs[pid] = strings.TrimSpace(string(c))

				break
			}
		}
	}

	return procs
}

func parentPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}

	// The command may hold spaces and parentheses: fields follow the last ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])

	if len(f) < 2 {
		return 0
	}

	ppid, _ := strconv.Atoi(f[1])

	return ppid
}
