package containers

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// TestImport: a `docker save` archive and an OCI layout reach the k8s.io
// namespace unpacked, under the names the CRI looks up, so the real CRI
// plugin of the same containerd answers ImageStatus for them as for a
// pulled image; archives that name nothing or are not archives are the
// caller's error, and leave no image behind.
func TestImport(t *testing.T) {
	sock := containerdtest.Start(t, containerdtest.Options{CRI: true})
	img := containerdtest.Image(t, map[string][]byte{"hello.txt": []byte("hello from an archive\n")})

	// docker save: RepoTags "myapp:dev", which the CRI knows as
	// docker.io/library/myapp:dev.
	var saved bytes.Buffer
	if err := tarball.Write(name.MustParseReference("myapp:dev"), img, &saved); err != nil {
		t.Fatal(err)
	}

	got, err := Import(t.Context(), sock, K8sNamespace, bytes.NewReader(saved.Bytes()))
	if err != nil {
		t.Fatal(err)
	}

	// A docker save archive's manifest is rebuilt by the import, so the
	// image is known by its ID, the config's digest, as the CRI knows it.
	id, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}

	if len(got) != 1 || got[0].Name != "docker.io/library/myapp:dev" || !strings.HasPrefix(got[0].Digest, "sha256:") || got[0].Size <= 0 {
		t.Fatalf("imported %+v, want docker.io/library/myapp:dev", got)
	}

	wantCRIImage(t, sock, "myapp:dev", id.String())
	wantUnpacked(t, sock, got[0].Name)

	// An OCI layout, tarred as `docker buildx --output type=oci` writes it,
	// naming its image by a full reference.
	oci := ociArchive(t, img, map[string]string{"org.opencontainers.image.ref.name": "registry.example.test/team/app:oci"})

	got, err = Import(t.Context(), sock, K8sNamespace, oci)
	if err != nil {
		t.Fatal(err)
	}

	if len(got) != 1 || got[0].Name != "registry.example.test/team/app:oci" {
		t.Fatalf("imported %+v from the OCI layout", got)
	}

	wantCRIImage(t, sock, "registry.example.test/team/app:oci", id.String())

	// Importing again is a no-op that succeeds, as a second pull is.
	if _, err := Import(t.Context(), sock, K8sNamespace, bytes.NewReader(saved.Bytes())); err != nil {
		t.Errorf("second import: %v", err)
	}

	before := imageNamesOf(t, sock)

	for _, tc := range []struct {
		name string
		in   io.Reader
		want string
	}{
		{"a bare tag names nothing", ociArchive(t, containerdtest.Image(t, map[string][]byte{"x": []byte("x\n")}), map[string]string{"org.opencontainers.image.ref.name": "dev"}), "names no image"},
		{"not an archive", strings.NewReader("this is not a tar file at all, just text\n"), "not a docker save or OCI image archive"},
		{"cut short", bytes.NewReader(saved.Bytes()[:len(saved.Bytes())/2]), "not a docker save or OCI image archive"},
		{"empty", bytes.NewReader(nil), "not a docker save or OCI image archive"},
	} {
		_, err := Import(t.Context(), sock, K8sNamespace, tc.in)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid with %q", tc.name, err, tc.want)
		}
	}

	if after := imageNamesOf(t, sock); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("failed imports changed the images:\nbefore %q\nafter  %q", before, after)
	}

	// Remove takes the tag and the CRI's aliases; the other tag of the
	// same image keeps it in the CRI.
	if err := Remove(t.Context(), sock, K8sNamespace, "myapp:dev"); err != nil {
		t.Fatal(err)
	}

	for _, n := range imageNamesOf(t, sock) {
		if strings.Contains(n, "myapp") {
			t.Errorf("%s outlived the removal of myapp:dev", n)
		}
	}

	wantCRIImage(t, sock, "registry.example.test/team/app:oci", id.String())

	if err := Remove(t.Context(), sock, K8sNamespace, "myapp:dev"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing it again: %v, want ErrNotFound", err)
	}
}

// ociArchive writes img into an OCI layout with the annotations and tars it.
func ociArchive(t *testing.T, img v1.Image, annotations map[string]string) io.Reader {
	t.Helper()

	dir := t.TempDir()

	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}

	if err := p.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}

	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	return &buf
}

// wantCRIImage asks the CRI plugin, as the kubelet does, for ref.
func wantCRIImage(t *testing.T, sock, ref, id string) {
	t.Helper()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	resp, err := runtimeapi.NewImageServiceClient(conn).ImageStatus(t.Context(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("CRI ImageStatus(%s): %v", ref, err)
	}

	if resp.GetImage() == nil {
		t.Fatalf("the CRI does not know %s", ref)
	}

	if resp.GetImage().GetId() != id {
		t.Errorf("the CRI's %s is image %s, want %s", ref, resp.GetImage().GetId(), id)
	}
}

func wantUnpacked(t *testing.T, sock, ref string) {
	t.Helper()

	c := containerdtest.Connect(t, sock)
	ctx := namespaces.WithNamespace(t.Context(), K8sNamespace)

	i, err := c.GetImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}

	if ok, err := i.IsUnpacked(ctx, "overlayfs"); !ok || err != nil {
		t.Errorf("%s: IsUnpacked = %t, %v", ref, ok, err)
	}
}

func imageNamesOf(t *testing.T, sock string) []string {
	t.Helper()

	list, err := Images(t.Context(), sock, K8sNamespace)
	if err != nil {
		t.Fatal(err)
	}

	var names []string
	for _, i := range list {
		names = append(names, i.Name)
	}

	return names
}
