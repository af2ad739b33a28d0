//go:build e2e

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/images"
)

// runtimeBuild is the output of `make images`, whose runc and CNI plugins
// the node image carries.
func runtimeBuild(t *testing.T) string {
	t.Helper()

	dir, _ := filepath.Abs(filepath.Join("_out", "images"))
	if _, err := os.Stat(filepath.Join(dir, "runtime", "runc")); err != nil {
		t.Fatalf("no runtime build: %v (run make images)", err)
	}

	return dir
}

// criClient talks to a Docker node's CRI containerd the way a kubelet
// does, over its socket, which lives on the node's state volume.
type criClient struct {
	rs runtimeapi.RuntimeServiceClient
	is runtimeapi.ImageServiceClient
}

// nodeRootPath is path inside a running node container, seen from this
// machine through the node's PID 1 (/proc/PID/root): the node's runtime
// lives at Talos's paths on its own root, partly on tmpfs, as on Talos.
func nodeRootPath(t *testing.T, api *client.Client, container, path string) string {
	t.Helper()

	ins, err := api.ContainerInspect(context.Background(), container, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}

	return fmt.Sprintf("/proc/%d/root%s", ins.Container.State.Pid, path)
}

func dialCRI(t *testing.T, sock string) *criClient {
	t.Helper()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { conn.Close() })

	return &criClient{rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn)}
}

// mirrorAddr is the address nodes reach a cache-serve listening on all
// of this machine's addresses at: the cluster network's gateway.
func mirrorAddr(dc *dockerCluster, cs *cacheServer) string {
	_, port, _ := net.SplitHostPort(cs.addr)
	return net.JoinHostPort(dc.subnet.Addr().Next().String(), port)
}

// TestDockerNodeRunsContainers: a Docker node pulls images through a
// registry mirror that is the image cache, runs a pod through the CRI, and
// shows it with containers -k and logs -k; the mirror follows the config.
func TestDockerNodeRunsContainers(t *testing.T) {
	bin := buildBinary(t)
	oci := imageBuild(t)
	rtDir := runtimeBuild(t)

	// A Kubernetes node: as heavy as a group of QEMU guests (see
	// TestDockerKubernetes).
	release, err := qemu.Exclusive()
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(release)

	cs := startCacheServe(t, bin, oci, "0.0.0.0:0")
	dc := newDockerCluster(t, bin)
	mirror := "http://" + mirrorAddr(dc, cs)

	created := dc.ok("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(), "--workers", "0",
		"--images-dir", rtDir, "--registry-mirror", "registry.k8s.io="+mirror, "--registry-mirror", "ghcr.io="+mirror, "--wait-timeout", "10m")

	node := dc.ip(0)
	ctrName := dc.name + "-controlplane-1"

	// While etcd waits for bootstrap, health says so plainly.
	if strings.Contains(created, "is not running on this node") {
		t.Fatalf("create's progress contradicts itself:\n%s", created)
	}

	// Nodes are privileged where the engine allows it, which the docker
	// CLI tells independently; otherwise they get every capability it can
	// grant.
	ins, err := dc.docker.ContainerInspect(t.Context(), ctrName, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}

	hc := ins.Container.HostConfig
	if _, err := docker(t, "run", "--rm", "--privileged", "--entrypoint", "/talosbox", ins.Container.Config.Image, "--version"); err == nil {
		if !hc.Privileged {
			t.Fatalf("the engine runs privileged containers, the node is not privileged")
		}
	} else if hc.Privileged || !strings.Contains(created, "the engine refuses privileged containers") || !slices.Contains(hc.CapAdd, "ALL") {
		t.Fatalf("the engine refuses privileged containers: node privileged=%v caps=%v; create said:\n%s", hc.Privileged, hc.CapAdd, created)
	}

	services := dc.ok("-n", node, "services")
	for _, svc := range []string{"containerd", "cri"} {
		if !regexpLine(services, `\s`+svc+`\s+Running\s+OK\s`) {
			t.Fatalf("%s is not running healthy:\n%s", svc, services)
		}
	}

	// What Talos 0.9's troubleshooting steps read on a Docker node: the
	// kernel log (the node has /dev/kmsg and CAP_SYSLOG) and the config at
	// Talos's path.
	if out := dc.ok("-n", node, "dmesg"); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(node) + `: \[\s*\d+\.\d+\] `).MatchString(out) {
		t.Fatalf("dmesg:\n%.500s", out)
	}

	if out := dc.ok("-n", node, "read", "/system/state/config.yaml"); !strings.Contains(out, "machine:") {
		t.Fatalf("read /system/state/config.yaml:\n%.500s", out)
	}

	hostsToml := nodeRootPath(t, dc.docker, ctrName, "/system/etc/cri/conf.d/hosts/registry.k8s.io/hosts.toml")

	data, err := os.ReadFile(hostsToml)
	if err != nil || !strings.Contains(string(data), "[host.'"+mirror+"']") {
		t.Fatalf("hosts.toml does not name the mirror %s (%v):\n%s", mirror, err, data)
	}

	cri := dialCRI(t, nodeRootPath(t, dc.docker, ctrName, "/run/containerd/containerd.sock"))
	ctx := t.Context()

	ref := images.APIServer(images.Kubernetes).String()

	start := time.Now()
	if _, err := cri.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatalf("pull %s through %s: %v\ncache-serve:\n%s", ref, mirror, err, cs.log())
	}

	t.Logf("pulled %s through the mirror in %s", ref, time.Since(start).Round(time.Millisecond))

	// The node runs a kubelet, which removes any pod it was not asked
	// for: its own static pods, pulled through the mirror, are what
	// containers -k and logs -k show.
	apiserverPod := `kube-system/kube-apiserver-\S+`

	section(t, "containers -k and logs -k", func() {
		var out string

		waitFor(t, 3*time.Minute, "the kubelet runs the apiserver static pod", func() error {
			out = dc.ok("-n", node, "containers", "-k")
			if regexpLine(out, `^`+regexp.QuoteMeta(node)+`\s+k8s\.io\s+`+apiserverPod+`\s+registry\.k8s\.io/pause:3\.10\s+[1-9]\d*\s+SANDBOX_READY$`) &&
				regexpLine(out, `^`+regexp.QuoteMeta(node)+`\s+k8s\.io\s+└─ `+apiserverPod+`:kube-apiserver\s+`+regexp.QuoteMeta(ref)+`\s+[1-9]\d*\s+CONTAINER_RUNNING$`) {
				return nil
			}

			return fmt.Errorf("containers -k:\n%s", out)
		})

		id := regexp.MustCompile(`kube-system/kube-apiserver-\S+:kube-apiserver`).FindString(out)

		out = dc.ok("-n", node, "logs", "-k", id)
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(node) + `: \S+ std(out|err) F .*Version: v` + regexp.QuoteMeta(images.Kubernetes)).MatchString(out) {
			t.Fatalf("logs -k %s does not show what the apiserver printed:\n%.2000s", id, out)
		}

		if out := dc.fails("-n", node, "logs", "-k", "default/e2e-version:nope"); !strings.Contains(out, `container "default/e2e-version:nope" not found`) {
			t.Fatalf("logs -k of a missing container:\n%s", out)
		}
	})

	section(t, "image pull and image list through the mirror", func() {
		flannel := images.FlannelImage().String()

		out := dc.ok("-n", node, "image", "pull", flannel)
		if !strings.Contains(out, "pulled image "+flannel) {
			t.Fatalf("image pull:\n%s", out)
		}

		if out := dc.ok("-n", node, "image", "list"); !strings.Contains(out, flannel) || !strings.Contains(out, ref) {
			t.Fatalf("image list lacks %s or %s:\n%s", flannel, ref, out)
		}

		// Readers list; pulling needs os:operator.
		reader := filepath.Join(t.TempDir(), "reader")
		dc.ok("config", "new", reader, "--roles", "os:reader")

		if out := dc.ok("--talosconfig", reader, "-n", node, "containers", "-k"); !regexpLine(out, apiserverPod+`:kube-apiserver`) {
			t.Fatalf("containers -k as a reader:\n%s", out)
		}

		if out := dc.fails("--talosconfig", reader, "-n", node, "image", "pull", flannel); !strings.Contains(out, "denied") {
			t.Fatalf("image pull as a reader:\n%s", out)
		}

		operator := filepath.Join(t.TempDir(), "operator")
		dc.ok("config", "new", operator, "--roles", "os:operator")
		dc.ok("--talosconfig", operator, "-n", node, "image", "pull", images.PauseImage().String())
	})

	section(t, "a mirror change is rendered live and used by the next pull", func() {
		cs2 := startCacheServe(t, bin, oci, "0.0.0.0:0")
		mirror2 := "http://" + mirrorAddr(dc, cs2)

		// gen config writes mirrors as RegistryMirrorConfig documents (as
		// Talos 1.12 on does): the JSON patch addresses the document.
		dc.ok("-n", node, "patch", "mc", "--immediate", "-p",
			`[{"op":"replace","path":"/RegistryMirrorConfig/registry.k8s.io/endpoints","value":[{"url":"`+mirror2+`"}]}]`)

		waitFile(t, hostsToml, "[host.'"+mirror2+"']")

		// The first mirror is gone: only the new one can serve the pull.
		_ = cs.cmd.Process.Kill()

		if _, err := cri.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: images.CoreDNSImage().String()}}); err != nil {
			t.Fatalf("pull through the new mirror %s: %v", mirror2, err)
		}
	})

	section(t, "a mirror that does not answer gives a pull error naming it", func() {
		dead := "http://" + net.JoinHostPort(dc.subnet.Addr().Next().String(), "1")

		dc.ok("-n", node, "patch", "mc", "--immediate", "-p",
			`[{"op":"replace","path":"/RegistryMirrorConfig/registry.k8s.io/endpoints","value":[{"url":"`+dead+`"}]}]`)
		waitFile(t, hostsToml, "[host.'"+dead+"']")

		out := dc.fails("-n", node, "image", "pull", images.Proxy(images.Kubernetes).String())
		if !strings.Contains(out, dead) {
			t.Fatalf("the pull error does not name the mirror %s:\n%s", dead, out)
		}
	})

	section(t, "an invalid CRI customisation is refused and the running config kept", func() {
		before := dc.ok("-n", node, "get", "mc", "-o", "yaml")

		out := dc.fails("-n", node, "patch", "mc", "--immediate", "-p",
			`[{"op":"add","path":"/machine/files","value":[{"op":"create","path":"/etc/cri/conf.d/20-customization.part","content":"[plugins\nbroken = "}]}]`)
		if !strings.Contains(out, "/etc/cri/conf.d/20-customization.part: line") {
			t.Fatalf("the error does not name the part and its line:\n%s", out)
		}

		if after := dc.ok("-n", node, "get", "mc", "-o", "yaml"); after != before {
			t.Fatalf("the refused patch changed the config:\n%s", after)
		}
	})
}

// section logs what the next checks are about. The cluster helpers fail
// the test they were made with, so the checks run in it, not in subtests.
func section(t *testing.T, what string, checks func()) {
	t.Helper()
	t.Log(what)
	checks()
}

// waitFile waits until the file at p contains want.
func waitFile(t *testing.T, p, want string) {
	t.Helper()

	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), want) {
			return
		}

		if time.Now().After(deadline) {
			t.Fatalf("%s does not contain %q after 30s (%v):\n%s", p, want, err, data)
		}

		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
}

// regexpLine says whether a line of s matches re.
func regexpLine(s, re string) bool {
	return regexp.MustCompile(`(?m)` + re).MatchString(s)
}
