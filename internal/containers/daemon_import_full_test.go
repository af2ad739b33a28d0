package containers

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// TestImportFullDisk: a node whose content store fills up mid-import says
// so, as the node's fault and not the archive's, and keeps the images it
// had. The content store is a 1 MiB tmpfs, the image's layer 4 MiB.
func TestImportFullDisk(t *testing.T) {
	sock := containerdtest.Start(t, containerdtest.Options{})

	// A first image goes in while there is room.
	var small bytes.Buffer
	if err := tarball.Write(name.MustParseReference("example.test/small:v1"), containerdtest.Image(t, map[string][]byte{"a": []byte("a\n")}), &small); err != nil {
		t.Fatal(err)
	}

	// The content store on a small filesystem of its own, as the store
	// lays itself out.
	content := filepath.Join(filepath.Dir(sock), "root", "io.containerd.content.v1.content")
	if err := syscall.Mount("tmpfs", content, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}

	t.Cleanup(func() { _ = syscall.Unmount(content, syscall.MNT_DETACH) })

	for _, d := range []string{"ingest", "blobs/sha256"} {
		if err := os.MkdirAll(filepath.Join(content, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := Import(t.Context(), sock, K8sNamespace, &small); err != nil {
		t.Fatal(err)
	}

	blob := make([]byte, 4<<20)
	rand.Read(blob)

	var big bytes.Buffer
	if err := tarball.Write(name.MustParseReference("example.test/big:v1"), containerdtest.Image(t, map[string][]byte{"blob": blob}), &big); err != nil {
		t.Fatal(err)
	}

	_, err := Import(t.Context(), sock, K8sNamespace, &big)
	if err == nil {
		t.Fatal("a 4 MiB layer fit in a 1 MiB store")
	}

	if errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("import into a full store: %v; want the node's error naming the full disk, not the archive's", err)
	}

	names := imageNamesOf(t, sock)
	if !strings.Contains(strings.Join(names, " "), "example.test/small:v1") || strings.Contains(strings.Join(names, " "), "big") {
		t.Errorf("images after the failed import: %q", names)
	}
}
