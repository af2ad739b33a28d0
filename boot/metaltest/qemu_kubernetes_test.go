//go:build e2e

package metaltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/boot/qemu"
	kimages "github.com/talosbox/talosbox/internal/images"
)

// kubectl runs the project-built kubectl (make images' _out/bin) against
// the kubeconfig cluster create merged into the cluster's HOME.
func (c *vmCluster) kubectl(root string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(root, "_out", "bin", "kubectl"), args...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "KUBECONFIG="+filepath.Join(c.home, ".kube", "config"))

	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}

	return string(out), err
}

// TestQEMUKubernetes: one metal control plane under QEMU, booted by
// cluster create qemu --iso-path from a nocloud ISO (its address and name
// from the NoCloud seed cluster create writes), pulls Kubernetes
// from the image cache the host serves on the segment, runs the kubelet
// and its static-pod control plane, and becomes a Ready node that runs
// the project's echo Deployment, reached through its Service by address
// and by name; then `talosctl upgrade` with all of it running drains the
// node, boots it from its disk and brings it back Ready and uncordoned
// with its workloads. Both of its boots from the disk unpack the
// initramfs a user ships (every default module, the container runtime,
// zstd at its best level), which the kernel's decompressor must take.
// Under TCG (no KVM here) it takes
// about 12 minutes, and it holds the guest lock (qemu.Exclusive), so the
// Docker Kubernetes tests wait for it rather than starve it.
func TestQEMUKubernetes(t *testing.T) {
	// The node installs itself from an installer image the host serves
	// (with the container runtime, as make installer's has), so that it
	// boots from its disk after its upgrade. Pulled before the guest lock
	// is taken: it may still be building.
	inst := pull(t, k8sInstallers)

	c := newVMCluster(t)

	root, err := qemu.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(filepath.Join(root, "_out", "bin", "kubectl")); err != nil {
		t.Fatalf("no kubectl: %v (run make images)", err)
	}

	// One node: the control plane takes pods (the echo Deployment). The
	// Ceph clients a Rook cluster's CSI drivers use, loaded as its
	// users load them.
	untaint := `{cluster: {allowSchedulingOnControlPlanes: true}, machine: {kernel: {modules: [{name: rbd}, {name: ceph}]}}}`

	v1 := inst.v1
	registry := serveLayoutOn(t, c.bin, inst.layout, "0.0.0.0")

	// The node boots what a user downloads: the ISO (of the installer's
	// kernel and initramfs, for the nocloud platform), whose NoCloud seed
	// cluster create writes; then its disk.
	iso := filepath.Join(t.TempDir(), "talosbox-nocloud-amd64.iso")
	buildISO(t, c.bin, inst.initramfs, iso, "--platform", "nocloud", "--extra-kernel-arg", "console=ttyS0")

	create := append([]string{"cluster", "create", "qemu"}, c.stateArgs()...)
	create = append(create, "--subnet", c.cidr.String(), "--controlplanes", "1", "--workers", "0",
		"--cpus", "2", "--memory", "3072",
		"--iso-path", iso, "--images-dir", filepath.Join(root, "_out", "images"),
		"--config-patch", untaint, "--wait-timeout", "25m",
		"--install-image", k8sInstaller, "--registry-mirror", fmt.Sprintf("installer.test=http://%s:%d", c.cidr.Addr().Next(), registry))

	start := time.Now()
	out := c.ok(30*time.Minute, create...)
	t.Logf("cluster create qemu, 1 control plane, to Kubernetes healthy: %s", time.Since(start).Round(time.Second))

	if _, timeline, ok := strings.Cut(out, "\ntimeline:\n"); ok {
		t.Logf("the create's timeline:\n%s", timeline)
	} else {
		t.Errorf("cluster create qemu printed no timeline:\n%s", out)
	}

	for _, want := range []string{"serving the image cache on http://" + c.cidr.Addr().Next().String() + ":", "waiting for all k8s nodes to report ready: OK", "is healthy"} {
		if !strings.Contains(out, want) {
			t.Fatalf("create output lacks %q:\n%s", want, out)
		}
	}

	nodes, err := c.kubectl(root, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	if err != nil || strings.TrimSpace(nodes) != c.name+"-controlplane-1 v"+kimages.Kubernetes+" True" {
		t.Fatalf("nodes: %v\n%s", err, nodes)
	}

	must := func(args ...string) string {
		t.Helper()

		out, err := c.kubectl(root, args...)
		if err != nil {
			t.Fatal(err)
		}

		return out
	}

	must("create", "deployment", "echo", "--image="+kimages.EchoImage().String(), "--replicas=2", "--port=8080")
	must("expose", "deployment", "echo", "--port=80", "--target-port=8080")
	must("rollout", "status", "deployment/echo", "--timeout=10m")

	ip := strings.TrimSpace(must("get", "service", "echo", "-o", "jsonpath={.spec.clusterIP}"))

	// A pod reaches the replicas through the Service's ClusterIP
	// (kube-proxy's rules on the metal kernel) and by name (CoreDNS).
	for i, url := range []string{"http://" + ip + "/", "http://echo.default.svc.cluster.local/"} {
		pod := fmt.Sprintf("client-%d", i)
		must("run", pod, "--restart=Never", "--image="+kimages.EchoImage().String(), "--command", "--", "/echo", "get", "--timeout", "180s", url)
		must("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/"+pod, "--timeout=5m")

		if got := strings.TrimSpace(must("logs", pod)); !strings.HasPrefix(got, "echo-") {
			t.Errorf("%s answered %q, want an echo pod's name", url, got)
		}
	}

	testNodeStorage(t, c, root, must)

	// What the whole node uses with the control plane, CoreDNS, flannel,
	// kube-proxy and the Deployment running (the target is under 1 GiB):
	// the kernel's view, so shared pages count once.
	t.Logf("node memory (MiB) with everything running:\n%s", c.ok(commandTimeout, "-n", c.ip(0), "memory"))

	// An OS upgrade with pods running (to another slot of the same
	// version: what differs is the reboot's path): the node is cordoned
	// and its pods evicted first, then machined stops the pods' shims,
	// unmounts the kubelet's shared bind and the pods' volumes, and only
	// then EPHEMERAL; it comes back from its disk, Ready, is uncordoned,
	// and the evicted replicas run again.
	console := filepath.Join(c.state, c.name, c.name+"-controlplane-1", "console.log")
	before, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(before), "[talos] installed "+v1+" on vda: the disk boots by itself") {
		t.Fatalf("the node did not install %s to its disk:\n%s", v1, before)
	}

	echoPods := func() string {
		return strings.TrimSpace(must("get", "pods", "-l", "app=echo", "-o", `jsonpath={.items[*].metadata.name}`))
	}
	podsBefore := echoPods()

	start = time.Now()
	c.ok(20*time.Minute, "-n", c.ip(0), "upgrade", "--image", k8sInstaller, "--timeout", "15m")
	t.Logf("talosctl upgrade with Kubernetes running, to back up: %s", time.Since(start).Round(time.Second))

	after, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}

	// The serial console ends its lines with CRLF.
	down := string(after[len(before):])
	node := c.name + "-controlplane-1"

	for _, re := range []string{
		`(?m)^\[talos\] cordoned node ` + node + `\r?$`,
		`(?m)^\[talos\] drained node ` + node + `: [1-9][0-9]* pods evicted`,
		`(?m)^\[talos\] unmounted /var\r?$`,
	} {
		if !regexp.MustCompile(re).MatchString(down) {
			t.Errorf("the upgrade's way down lacks %s:\n%s", re, down)
		}
	}

	t.Logf("the upgrade's drain:\n%s", strings.Join(regexp.MustCompile(`(?m)^\[talos\] (cordoned|drain).*$`).FindAllString(down, -1), "\n"))

	back := time.Now()

	c.until("the node Ready and uncordoned after its upgrade", 10*time.Minute, func() error {
		out, err := c.kubectl(root, "get", "nodes", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status} {.items[*].spec.unschedulable} {.items[*].metadata.annotations.talos\.dev/cordoned}`)
		if err != nil {
			return err
		}

		if strings.TrimSpace(out) != "True" {
			return fmt.Errorf("node Ready, unschedulable, talos.dev/cordoned: %q", out)
		}

		return nil
	})
	t.Logf("upgrade back to Ready and uncordoned: %s more", time.Since(back).Round(time.Second))
	must("rollout", "status", "deployment/echo", "--timeout=10m")

	if podsAfter := echoPods(); podsAfter == podsBefore {
		t.Errorf("the echo pods were not evicted (the same pods %s before and after)", podsAfter)
	}
}
