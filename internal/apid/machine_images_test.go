package apid

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc/codes"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/containers/containerdtest"
	"github.com/talosbox/talosbox/internal/role"
)

// TestImageImport: Talos's ImageService.Import through one node's apid
// into another node's CRI containerd. The archive is larger than any one
// request may be, so it only arrives if the stream is relayed chunk by
// chunk; the image is then listed and removed through the same proxy.
// Only admins import, as on Talos; a malformed stream or archive is the
// caller's error.
func TestImageImport(t *testing.T) {
	// Short: the sockets live under it.
	dir, err := os.MkdirTemp("", "apid")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(dir) })

	c, err := startEnv(dir, nodeConfig(t, false, hostname("node-c"), "machine: {certSANs: [127.0.0.3]}"), "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	containerdtest.Start(t, containerdtest.Options{Socket: c.node.Runtime().CRISocket, CRI: true})
	c.waitServing(t, false)

	archive := savedImage(t, "myapp:dev", 3*MaxRequestSize/2)
	ctx := testCtx(t)
	toC := withNode(ctx, c.addr)

	for _, r := range []role.Role{role.Reader, role.Operator} {
		_, err := importArchive(toC, machine.NewImageServiceClient(dial(t, shared.addr, clientCert(t, string(r)))), archive)
		wantCode(t, err, codes.PermissionDenied, string(r))
	}

	admin := machine.NewImageServiceClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))

	got, err := importArchive(toC, admin, archive)
	if err != nil {
		t.Fatal(err)
	}

	if got != "docker.io/library/myapp:dev" {
		t.Fatalf("imported %q", got)
	}

	list := func() []string {
		s, err := admin.List(toC, &machine.ImageServiceListRequest{})
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

			names = append(names, img.GetName())
		}
	}

	if names := list(); !slices.Contains(names, "docker.io/library/myapp:dev") {
		t.Fatalf("node C lists %q after the import", names)
	}

	// The stream's first message names the instance, the rest are chunks.
	s, err := admin.Import(toC)
	if err != nil {
		t.Fatal(err)
	}

	if err := s.Send(&machine.ImageServiceImportRequest{Request: &machine.ImageServiceImportRequest_ImageChunk{ImageChunk: &common.Data{Bytes: archive[:100]}}}); err != nil {
		t.Fatal(err)
	}

	_, err = s.CloseAndRecv()
	wantCode(t, err, codes.InvalidArgument, "the first message must name the containerd instance")

	_, err = importArchive(toC, admin, []byte("plain text, not a tar archive"))
	wantCode(t, err, codes.InvalidArgument, "not a docker save or OCI image archive")

	_, err = importArchive(toC, admin, archive[:len(archive)/3])
	wantCode(t, err, codes.InvalidArgument, "not a docker save or OCI image archive")

	if _, err := admin.Remove(toC, &machine.ImageServiceRemoveRequest{ImageRef: "myapp:dev"}); err != nil {
		t.Fatal(err)
	}

	if names := list(); slices.Contains(names, "docker.io/library/myapp:dev") {
		t.Errorf("node C lists %q after the removal", names)
	}

	_, err = admin.Remove(toC, &machine.ImageServiceRemoveRequest{ImageRef: "myapp:dev"})
	wantCode(t, err, codes.NotFound, "not found")
}

// importArchive streams data as talosctl does: the instance, then 32 KiB
// chunks.
func importArchive(ctx context.Context, ic machine.ImageServiceClient, data []byte) (string, error) {
	s, err := ic.Import(ctx)
	if err != nil {
		return "", err
	}

	send := func(req *machine.ImageServiceImportRequest) error {
		if err := s.Send(req); err != nil && err != io.EOF {
			return err
		}

		return nil
	}

	if err := send(&machine.ImageServiceImportRequest{Request: &machine.ImageServiceImportRequest_Containerd{
		Containerd: &common.ContainerdInstance{Namespace: common.ContainerdNamespace_NS_CRI},
	}}); err != nil {
		return "", err
	}

	for len(data) > 0 {
		n := min(len(data), 32<<10)

		if err := send(&machine.ImageServiceImportRequest{Request: &machine.ImageServiceImportRequest_ImageChunk{ImageChunk: &common.Data{Bytes: data[:n]}}}); err != nil {
			return "", err
		}

		data = data[n:]
	}

	resp, err := s.CloseAndRecv()

	return resp.GetName(), err
}

// savedImage is `docker save` of an image for this platform tagged ref,
// with a layer of size random bytes.
func savedImage(t *testing.T, ref string, size int) []byte {
	t.Helper()

	blob := make([]byte, size)
	rand.Read(blob)

	img := containerdtest.Image(t, map[string][]byte{"blob": blob})

	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		t.Fatal(err)
	}

	return buf.Bytes()
}
