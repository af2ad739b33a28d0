package initramfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/initramfs/initramfstest"
)

func TestFindKernel(t *testing.T) {
	one := t.TempDir()
	initramfstest.Kernel(t, one, map[string][]string{"kernel/fs/xfs/xfs.ko": nil})

	two := t.TempDir()
	initramfstest.Kernel(t, two, map[string][]string{"kernel/fs/xfs/xfs.ko": nil})

	if err := os.MkdirAll(filepath.Join(two, "lib/modules/5.10.0-1-amd64/kernel"), 0o755); err != nil {
		t.Fatal(err)
	}

	// A modules directory without kernel/ (a leftover) does not count.
	if err := os.MkdirAll(filepath.Join(one, "lib/modules/5.10.0-9-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, dir, release string
		want               string // release found, or
		err                error
	}{
		{"the only release", one, "", initramfstest.Release, nil},
		{"named release", two, "5.10.0-1-amd64", "5.10.0-1-amd64", nil},
		{"several", two, "", "", ErrSeveralKernels},
		{"named and absent", one, "5.10.0-9-amd64", "", ErrNoKernel},
		{"no directory", filepath.Join(one, "nope"), "", "", ErrNoKernel},
		{"empty directory", t.TempDir(), "", "", ErrNoKernel},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := FindKernel(tt.dir, tt.release)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if k.Release != tt.want || k.ModulesDir != filepath.Join(tt.dir, "lib/modules", tt.want) {
				t.Errorf("found %+v, want release %s", k, tt.want)
			}

			if img := filepath.Join(tt.dir, "boot/vmlinuz-"+tt.want); fileExists(img) != (k.Image == img) {
				t.Errorf("image %q", k.Image)
			}
		})
	}
}

func TestWriteDepFile(t *testing.T) {
	dir := initramfstest.Kernel(t, t.TempDir(), initramfstest.NodeModules)

	m, err := OpenModules(dir)
	if err != nil {
		t.Fatal(err)
	}

	n, err := m.WriteDepFile()
	if err != nil {
		t.Fatal(err)
	}

	if n != len(initramfstest.NodeModules) {
		t.Errorf("%d modules listed, want %d", n, len(initramfstest.NodeModules))
	}

	dep, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		t.Fatal(err)
	}

	if lines := strings.Count(string(dep), "\n"); lines != n {
		t.Errorf("%d lines for %d modules", lines, n)
	}

	checkDepFile(t, string(dep), func(rel string) bool { return fileExists(filepath.Join(dir, rel)) })

	if !bytes.Contains(dep, []byte("\nkernel/fs/ext2/ext2.ko:\n")) {
		t.Error("the whole tree is not listed: no ext2")
	}
}

// The node's initramfs from the real kernel scripts/fetch-kernel.sh
// unpacks (make test fetches it first).
func TestBuildDebianKernel(t *testing.T) {
	dir := os.Getenv("TALOSBOX_KERNEL_DIR")
	if dir == "" {
		dir = filepath.Join("..", "_out", "kernel")
	}

	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && os.Getenv("TALOSBOX_NO_KERNEL") == "1" {
		t.Skipf("no kernel in %s and TALOSBOX_NO_KERNEL=1", dir)
	}

	k, err := FindKernel(dir, "")
	if err != nil {
		t.Fatalf("%v: run scripts/fetch-kernel.sh %s (or set TALOSBOX_NO_KERNEL=1 to skip when it is absent)", err, dir)
	}

	bin := filepath.Join(t.TempDir(), "talosbox")
	initramfstest.Executable(t, bin, false)

	a, res, err := Assemble(Options{Binary: bin, ModulesDir: k.ModulesDir})
	if err != nil {
		t.Fatal(err)
	}

	// Debian's cloud 6.1: the ten modules pull in 23 more.
	if len(res.Modules) < 20 {
		t.Errorf("%d module files: %v", len(res.Modules), res.Modules)
	}

	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}

	seen := map[string]member{}
	for _, m := range readNewc(t, buf.Bytes()) {
		seen[m.name] = m
	}

	base := "lib/modules/" + k.Release + "/"
	for _, p := range []string{"kernel/fs/xfs/xfs.ko", "kernel/drivers/char/hw_random/virtio-rng.ko", "kernel/drivers/md/dm-mod.ko", "modules.builtin"} {
		if _, ok := seen[base+p]; !ok {
			t.Errorf("no %s", base+p)
		}
	}

	checkDepFile(t, seen[base+"modules.dep"].data, func(rel string) bool { _, ok := seen[base+rel]; return ok })
}
