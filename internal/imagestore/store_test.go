package imagestore_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/registry"
)

func randomImage(t *testing.T, size int64) v1.Image {
	t.Helper()

	img, err := random.Image(size, 2)
	if err != nil {
		t.Fatal(err)
	}

	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()

	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}

	return d
}

func blobCount(t *testing.T, dir string) int {
	t.Helper()

	ents, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}

	return len(ents)
}

func TestWriteMergesReplacesAndCollects(t *testing.T) {
	dir := t.TempDir()
	a, b, a2 := randomImage(t, 100), randomImage(t, 200), randomImage(t, 300)

	if _, err := imagestore.Write(dir, []imagestore.Named{{Ref: "x.io/a:1", Image: a}, {Ref: "x.io/b:1", Image: b}}); err != nil {
		t.Fatal(err)
	}

	if n := blobCount(t, dir); n != 8 { // 2 × (manifest, config, 2 layers)
		t.Fatalf("%d blobs after the first write", n)
	}

	// A new a:1 replaces the old one, b stays, and a's old blobs go.
	st, err := imagestore.Write(dir, []imagestore.Named{{Ref: "x.io/a:1", Image: a2}})
	if err != nil {
		t.Fatal(err)
	}

	if len(st.Images) != 2 {
		t.Fatalf("images: %+v", st.Images)
	}

	if im, ok := st.Lookup("x.io/a:1"); !ok || im.Descriptor.Digest != digest(t, a2) {
		t.Errorf("a:1 = %+v", im)
	}

	if im, ok := st.Lookup("x.io/b:1"); !ok || im.Descriptor.Digest != digest(t, b) {
		t.Errorf("b:1 = %+v", im)
	}

	if n := blobCount(t, dir); n != 8 {
		t.Errorf("%d blobs after replacing a:1, want 8 (the old ones collected)", n)
	}

	if _, err := os.Stat(st.BlobPath(digest(t, a))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old manifest of a:1 still there: %v", err)
	}
}

func TestCopyImagesRefusesCorruptSource(t *testing.T) {
	src := t.TempDir()
	img := randomImage(t, 500)

	st, err := imagestore.Write(src, []imagestore.Named{{Ref: "x.io/a:1", Image: img}})
	if err != nil {
		t.Fatal(err)
	}

	ls, _ := img.Layers()
	ld, _ := ls[0].Digest()

	if err := os.WriteFile(st.BlobPath(ld), []byte("not the layer"), 0o644); err != nil {
		t.Fatal(err)
	}

	dst := t.TempDir()

	err = st.CopyImages(dst, []string{"x.io/a:1"})

	var de *imagestore.DigestError
	if !errors.As(err, &de) || de.Want != ld {
		t.Fatalf("copy of a corrupt layer: %v", err)
	}

	if _, err := os.Stat(filepath.Join(dst, "index.json")); err == nil {
		t.Error("the cache indexes an image it could not copy")
	}

	if err := st.CopyImages(dst, []string{"x.io/nope:1"}); err == nil || !strings.Contains(err.Error(), "x.io/nope:1 is not in") {
		t.Errorf("unknown image: %v", err)
	}
}

func TestCreateCacheFromBuildAndRegistry(t *testing.T) {
	build := t.TempDir()
	local, upstream := randomImage(t, 100), randomImage(t, 200)

	if _, err := imagestore.Write(build, []imagestore.Named{{Ref: "registry.k8s.io/pause:3.10", Image: local}}); err != nil {
		t.Fatal(err)
	}

	// A real registry over HTTP holds the other image.
	upDir := t.TempDir()
	if _, err := imagestore.Write(upDir, []imagestore.Named{{Ref: "registry.k8s.io/coredns/coredns:v1", Image: upstream}}); err != nil {
		t.Fatal(err)
	}

	srv, err := registry.New(upDir, nil)
	if err != nil {
		t.Fatal(err)
	}

	hs := httptest.NewServer(srv)
	defer hs.Close()

	host := strings.TrimPrefix(hs.URL, "http://")
	cache := filepath.Join(t.TempDir(), "cache")
	remoteRef := host + "/coredns/coredns:v1"

	err = imagestore.CreateCache(context.Background(), imagestore.CacheOptions{
		Dir: cache, Images: []string{"registry.k8s.io/pause:3.10", remoteRef},
		Sources: []string{filepath.Join(t.TempDir(), "absent"), build}, Remote: true, Insecure: true,
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
	})
	if err != nil {
		t.Fatal(err)
	}

	st, err := imagestore.Open(cache)
	if err != nil {
		t.Fatal(err)
	}

	for ref, img := range map[string]v1.Image{"registry.k8s.io/pause:3.10": local, remoteRef: upstream} {
		im, ok := st.Lookup(ref)
		if !ok || im.Descriptor.Digest != digest(t, img) {
			t.Errorf("%s in the cache: %+v, %v", ref, im, ok)
		}

		hs, err := st.Blobs(im)
		if err != nil {
			t.Fatal(err)
		}

		for _, h := range hs {
			if err := st.Verify(h); err != nil {
				t.Errorf("%s: %v", ref, err)
			}
		}
	}

	// Without registries an image the build lacks is a clear error.
	err = imagestore.CreateCache(context.Background(), imagestore.CacheOptions{
		Dir: filepath.Join(t.TempDir(), "c2"), Images: []string{"registry.k8s.io/nope:1"}, Sources: []string{build},
	})
	if err == nil || !strings.Contains(err.Error(), "registry.k8s.io/nope:1 is in none of") {
		t.Errorf("unknown image: %v", err)
	}

	if _, err := imagestore.Canonical("Not A Ref!"); err == nil {
		t.Error("a malformed reference was accepted")
	}
}
