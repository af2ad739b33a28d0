//go:build e2e

package metaltest

import (
	"path/filepath"
	"testing"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/initramfs"
)

// TestBootZstdInitramfs boots what `make initramfs INITRAMFS_FLAGS="--compress
// zstd"` ships: the stripped binary, every default module and the
// container runtime, compressed at zstd's best level (the other tests boot
// uncompressed archives, which load fastest under TCG). The guest kernel
// must unpack it and reach maintenance mode. Its size is the node's
// initramfs figure (target 30 MB).
func TestBootZstdInitramfs(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	k, err := kernel()
	if err != nil {
		t.Fatal(err)
	}

	root, err := qemu.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}

	rt, err := initramfs.RuntimeIn(filepath.Join(root, "_out", "images"))
	if err != nil {
		t.Fatalf("the container runtime (make images): %v", err)
	}

	dir, err := work()
	if err != nil {
		t.Fatal(err)
	}

	p := filepath.Join(dir, "initramfs.cpio.zst")

	res, err := initramfs.BuildFile(p, initramfs.Options{Binary: bin, ModulesDir: k.ModulesDir, Compression: initramfs.Zstd, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("the shipped initramfs: %.1f MiB zstd (%d bytes; %d uncompressed), %d entries, %d modules",
		float64(res.Size)/(1<<20), res.Size, res.CPIOSize, res.Entries, len(res.Modules))

	n := newNode(t, nodeOptions{image: p})
	n.boot()
	n.wait("[talos] loaded kernel modules", bootTimeout)
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)
}
