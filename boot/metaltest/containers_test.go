//go:build e2e

package metaltest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/talosbox/talosbox/boot/qemu"
	kimages "github.com/talosbox/talosbox/internal/images"
)

// criTCPPort is where the test's CRI customisation makes the guest's CRI
// containerd listen on TCP (plain gRPC), so the host can drive it as a
// kubelet would.
const criTCPPort = 50010

// serveCache runs `talosctl image cache-serve` on the image build and
// returns the port it listens on at 127.0.0.1.
func serveCache(t *testing.T, bin string) int {
	t.Helper()

	root, err := qemu.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}

	return serveLayout(t, bin, filepath.Join(root, "_out", "images", "oci"))
}

// serveLayout serves the OCI layout dir read-only as a registry.
func serveLayout(t *testing.T, bin, dir string) int {
	t.Helper()

	return serveLayoutOn(t, bin, dir, "127.0.0.1")
}

// serveLayoutOn serves dir on host (0.0.0.0: every address, for guests on
// a segment whose gateway is this host).
func serveLayoutOn(t *testing.T, bin, dir, host string) int {
	t.Helper()

	cmd := exec.Command(bin, "talosctl", "image", "cache-serve", "--image-cache-path", dir, "--address", host+":0")
	pr, pw := io.Pipe()
	cmd.Stderr = pw

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
	})

	port := make(chan int, 1)
	re := regexp.MustCompile(`serving \d+ images read-only on http://[0-9.:\[\]]+:(\d+)`)

	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			t.Logf("cache-serve: %s", sc.Text())

			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				var p int
				fmt.Sscan(m[1], &p) //nolint:errcheck // the regexp matched digits
				port <- p
			}
		}
	}()

	select {
	case p := <-port:
		return p
	case <-time.After(30 * time.Second):
		t.Fatal("cache-serve did not start (run make images first)")
	}

	return 0
}

// TestMetalNodeRunsContainers boots a node whose initramfs carries the
// container runtime on the real kernel (cgroup2, overlay from a module),
// pulls images through a registry mirror that is the host's image cache,
// and runs a pod and a container through the CRI.
func TestMetalNodeRunsContainers(t *testing.T) {
	hostCRI, err := freePort()
	if err != nil {
		t.Fatal(err)
	}

	n := newNode(t, nodeOptions{disk: true, containers: true, memoryMiB: 1536, forwards: map[int]int{hostCRI: criTCPPort}})
	cachePort := serveCache(t, n.bin)

	patch := filepath.Join(n.dir, "patch.yaml")
	if err := os.WriteFile(patch, fmt.Appendf(nil, `machine:
  registries:
    mirrors:
      registry.k8s.io:
        endpoints: [http://10.0.2.2:%d]
  files:
    - op: create
      path: /etc/cri/conf.d/20-customization.part
      content: |
        [grpc]
          tcp_address = "0.0.0.0:%d"
        [plugins."io.containerd.grpc.v1.cri"]
          disable_tcp_service = false
`, cachePort, criTCPPort), 0o600); err != nil {
		t.Fatal(err)
	}

	cp := n.genConfig("containers", "--config-patch", "@"+patch)

	n.boot()
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)
	n.ok("apply-config", "--insecure", "-f", cp)

	services := n.wait(markServices, servicesTimeout)
	for _, want := range []string{"containerd=Running healthy", "cri=Running healthy"} {
		if !strings.Contains(services, want) {
			t.Fatalf("services line lacks %q: %s", want, services)
		}
	}

	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", hostCRI), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	rs, is := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	ref := kimages.CoreDNSImage().String()

	start := time.Now()

	// On failure, the CRI's own log says why.
	t.Cleanup(func() {
		if t.Failed() {
			out, _, _ := n.talosctl("logs", "cri")
			t.Logf("logs cri:\n%s", out)
			out, e, _ := n.talosctl("read", "/etc/cri/conf.d/cri.toml")
			t.Logf("cri.toml:\n%s%s", out, e)
			out, e, _ = n.talosctl("ls", "-l", "/etc/cri/conf.d")
			t.Logf("conf.d:\n%s%s", out, e)
		}
	})

	// Slirp accepts the forwarded connection before anything listens; the
	// first calls may fail until containerd's TCP listener is there.
	n.until("the CRI answers over TCP", time.Minute, func() error {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()

		_, err := rs.Version(cctx, &runtimeapi.VersionRequest{})

		return err
	})

	if _, err := is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatalf("pull %s through the mirror: %v", ref, err)
	}

	t.Logf("pulled %s in %s", ref, time.Since(start).Round(time.Millisecond))

	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "metal", Namespace: "default", Uid: "metal-uid"},
		LogDirectory: "/var/log/pods/default_metal_metal-uid",
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}

	sb, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}

	ctr, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId, SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "coredns"},
			Image:    &runtimeapi.ImageSpec{Image: ref},
			Args:     []string{"-version"},
			LogPath:  "coredns/0.log",
		},
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}

	if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}

	n.until("the container exits 0", 2*time.Minute, func() error {
		st, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.ContainerId})
		if err != nil {
			return err
		}

		if s := st.GetStatus(); s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || s.GetExitCode() != 0 {
			return fmt.Errorf("container %s, exit code %d: %s", s.GetState(), s.GetExitCode(), s.GetMessage())
		}

		return nil
	})

	st, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId})
	if err != nil || st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandbox: %v %v", st.GetStatus().GetState(), err)
	}

	// What the operator sees through the API.
	if out := n.ok("containers", "-k"); !strings.Contains(out, "└─ default/metal:coredns") || !strings.Contains(out, "CONTAINER_EXITED") {
		t.Fatalf("containers -k:\n%s", out)
	}

	if out := n.ok("logs", "-k", "default/metal:coredns"); !strings.Contains(out, "CoreDNS-"+kimages.CoreDNS) {
		t.Fatalf("logs -k:\n%s", out)
	}
}
