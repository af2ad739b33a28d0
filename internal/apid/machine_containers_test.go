package apid

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/containers/containerdtest"
	"github.com/talosbox/talosbox/internal/role"
)

// The test binary is also the containerd (and shim) these tests start;
// init runs before TestMain, which would start a node first.
func init() { containerdtest.Main() }

// The role table: pulling is an operator's, listing a reader's.
func TestImagePullRoles(t *testing.T) {
	ctx := testCtx(t)
	req := &machine.ImagePullRequest{Namespace: common.ContainerdNamespace_NS_CRI, Reference: "registry.k8s.io/pause:3.10"}

	_, err := machineClient(dial(t, shared.addr, clientCert(t, string(role.Reader)))).ImagePull(ctx, req)
	wantCode(t, err, codes.PermissionDenied, "os:reader")

	// Past authorization: this node runs no containerd.
	for _, role := range []role.Role{role.Operator, role.Admin} {
		_, err = machineClient(dial(t, shared.addr, clientCert(t, string(role)))).ImagePull(ctx, req)
		wantCode(t, err, codes.Unavailable, "containerd is not running")
	}
}

// Without a containerd, or asked wrongly, the calls say so with the
// right code rather than an internal error.
func TestContainersErrors(t *testing.T) {
	ctx := testCtx(t)
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Reader))))

	_, err := mc.Containers(ctx, &machine.ContainersRequest{Namespace: "k8s.io", Driver: common.ContainerDriver_CRI})
	wantCode(t, err, codes.Unavailable, "containerd is not running: no socket at ")

	_, err = mc.Containers(ctx, &machine.ContainersRequest{Namespace: "system", Driver: common.ContainerDriver_CRI})
	wantCode(t, err, codes.InvalidArgument, "the CRI driver serves namespace k8s.io only")

	_, err = mc.Stats(ctx, &machine.StatsRequest{})
	wantCode(t, err, codes.InvalidArgument, "a containerd namespace is required")

	_, err = mc.Stats(ctx, &machine.StatsRequest{Namespace: "system"})
	wantCode(t, err, codes.Unavailable, "containerd is not running")

	il, err := mc.ImageList(ctx, &machine.ImageListRequest{})
	if err == nil {
		_, err = il.Recv()
	}

	wantCode(t, err, codes.InvalidArgument, "use NS_SYSTEM or NS_CRI")

	logs := func(req *machine.LogsRequest) error {
		s, err := mc.Logs(ctx, req)
		if err != nil {
			return err
		}

		_, err = s.Recv()

		return err
	}

	// -k with an ID that is not <ns>/<pod>:<container>.
	wantCode(t, logs(&machine.LogsRequest{Namespace: "k8s.io", Driver: common.ContainerDriver_CRI, Id: "etcd"}), codes.InvalidArgument, `container "etcd": want <namespace>/<pod>:<container>`)
	wantCode(t, logs(&machine.LogsRequest{Namespace: "k8s.io", Id: "kube-system/x:y"}), codes.Unavailable, "containerd is not running")
	wantCode(t, logs(&machine.LogsRequest{Namespace: "other", Id: "x"}), codes.InvalidArgument, `namespace "other" is not served`)
}

// TestContainersAndImages runs the node's two containerd instances (the
// test binary as containerd) where the node's runtime layout puts their
// sockets, and asks apid: a system service is listed and measured, an
// operator pulls an image through the mirror in the node's hosts tree,
// and readers list it.
func TestContainersAndImages(t *testing.T) {
	// Short: the sockets live under it.
	dir, err := os.MkdirTemp("", "apid")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(dir) })

	e, err := startEnv(dir, nodeConfig(t, false, hostname("node-c")), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	rt := e.node.Runtime()
	system := containerdtest.Start(t, containerdtest.Options{Socket: rt.SystemSocket})
	containerdtest.Start(t, containerdtest.Options{Socket: rt.CRISocket})

	pid := containerdtest.RunSleeper(t, containerdtest.Connect(t, system), "system", "svc", nil)

	e.waitServing(t, false)

	ctx := testCtx(t)
	reader := machineClient(dial(t, e.addr, clientCert(t, string(role.Reader))))
	operator := machineClient(dial(t, e.addr, clientCert(t, string(role.Operator))))

	cs, err := reader.Containers(ctx, &machine.ContainersRequest{Namespace: "system"})
	if err != nil {
		t.Fatal(err)
	}

	if msgs := cs.GetMessages(); len(msgs) != 1 || msgs[0].GetMetadata().GetHostname() != e.host || len(msgs[0].GetContainers()) != 1 {
		t.Fatalf("containers: %v", cs)
	}

	if c := cs.GetMessages()[0].GetContainers()[0]; c.GetId() != "svc" || c.GetPodId() != "svc" || c.GetPid() != pid || c.GetStatus() != "RUNNING" || c.GetNamespace() != "system" {
		t.Errorf("container %v, want svc RUNNING with PID %d", c, pid)
	}

	stats, err := reader.Stats(ctx, &machine.StatsRequest{Namespace: "system"})
	if err != nil {
		t.Fatal(err)
	}

	if s := stats.GetMessages()[0].GetStats(); len(s) != 1 || s[0].GetId() != "svc" || s[0].GetMemoryUsage() == 0 || s[0].GetCpuUsage() == 0 {
		t.Errorf("stats %v", s)
	}

	// The mirror, as machined renders machine.registries into the node's
	// hosts tree.
	registry := containerdtest.Registry(t, "test/hello:v1")
	containerdtest.MirrorOnly(t, rt.HostsDir, "example.test", "http://"+registry)

	pull := &machine.ImagePullRequest{Namespace: common.ContainerdNamespace_NS_CRI, Reference: "example.test/test/hello:v1"}
	if _, err := operator.ImagePull(ctx, pull); err != nil {
		t.Fatal(err)
	}

	pull.Reference = "example.test/test/absent:v1"
	_, err = operator.ImagePull(ctx, pull)
	wantCode(t, err, codes.NotFound, "http://"+registry)

	listImages := func(ns common.ContainerdNamespace) []string {
		s, err := reader.ImageList(ctx, &machine.ImageListRequest{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}

		var names []string

		for {
			img, err := s.Recv()
			if err == io.EOF {
				return names
			}

			if err != nil {
				t.Fatal(err)
			}

			if img.GetMetadata().GetHostname() != e.host || !strings.HasPrefix(img.GetDigest(), "sha256:") || img.GetSize() == 0 || img.GetCreatedAt() == nil {
				t.Errorf("image %v", img)
			}

			names = append(names, img.GetName())
		}
	}

	if names := listImages(common.ContainerdNamespace_NS_CRI); !slices.Contains(names, "example.test/test/hello:v1") {
		t.Errorf("k8s.io images %q, want the pulled one", names)
	}

	if names := listImages(common.ContainerdNamespace_NS_SYSTEM); len(names) != 0 {
		t.Errorf("system images %q, want none", names)
	}
}
