package apid

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
)

// TestLocalSocket: the local socket needs no certificate and serves this
// node as os:reader: reads work, secrets are redacted, admin calls and
// forwarding to another node are refused, and only root may open it.
func TestLocalSocket(t *testing.T) {
	e := newEnv(t, nodeConfig(t, false), "127.0.0.1:0")
	e.waitServing(t, false)

	sock := filepath.Join(t.TempDir(), "run", "apid.sock")

	lis, err := listenLocal(sock)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	go func() { done <- e.srv.ServeLocal(ctx, lis) }()

	t.Cleanup(func() {
		cancel()

		if err := <-done; err != nil {
			t.Errorf("ServeLocal: %v", err)
		}
	})

	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi.Mode(), err)
	}

	c, err := client.NewLocal(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Machine.Version(testCtx(t), &emptypb.Empty{}); err != nil {
		t.Fatalf("Version: %v", err)
	}

	mc, err := c.Resource.Get(testCtx(t), &resource.GetRequest{Type: "machineconfig", Id: "v1alpha1"})
	if err != nil || !mc.GetResource().GetRedacted() {
		t.Errorf("machine config over the local socket: redacted=%v, %v", mc.GetResource().GetRedacted(), err)
	}

	stream, err := c.Machine.Read(testCtx(t), &machine.ReadRequest{Path: "/etc/hostname"})
	if err == nil {
		_, err = stream.Recv()
	}

	wantCode(t, err, codes.PermissionDenied, "os:reader")

	_, err = c.Machine.Version(withNode(testCtx(t), "10.5.0.3"), &emptypb.Empty{})
	wantCode(t, err, codes.InvalidArgument, "this node only")

	// A stale socket from a previous run is replaced.
	cancel()

	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if lis, err = listenLocal(sock); err != nil {
		t.Fatalf("a second listen over the old socket: %v", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()

	go func() { done <- e.srv.ServeLocal(ctx2, lis) }()

	c2, err := client.NewLocal(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()

	if _, err := c2.Machine.Version(testCtx(t), &emptypb.Empty{}); err != nil {
		t.Fatalf("Version over the second socket: %v", err)
	}

	cancel2()

	if err := <-done; err != nil {
		t.Fatal(err)
	}

	done <- nil // for the cleanup's read
}
