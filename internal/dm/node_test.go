package dm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEnsureNode(t *testing.T) {
	needRoot(t)

	dev := t.TempDir()
	p := filepath.Join(dev, "mapper", "vol")

	// Made, with /dev/mapper, when missing.
	if got, err := ensureNode(dev, "vol", 253, 4); err != nil || got != p {
		t.Fatalf("ensureNode = %q, %v", got, err)
	}

	checkNode(t, p, 253, 4)

	// Kept when right; replaced when stale (another number).
	if _, err := ensureNode(dev, "vol", 253, 4); err != nil {
		t.Fatal(err)
	}

	if _, err := ensureNode(dev, "vol", 253, 300); err != nil {
		t.Fatal(err)
	}

	checkNode(t, p, 253, 300)

	// udev's symlink to the right node is kept; a dangling one replaced.
	dmN := filepath.Join(dev, "dm-300")
	if err := unix.Mknod(dmN, unix.S_IFBLK|0o600, int(unix.Mkdev(253, 300))); err != nil {
		t.Fatal(err)
	}

	os.Remove(p)

	if err := os.Symlink("../dm-300", p); err != nil {
		t.Fatal(err)
	}

	if _, err := ensureNode(dev, "vol", 253, 300); err != nil {
		t.Fatal(err)
	}

	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("udev's symlink was replaced: %v, %v", fi, err)
	}

	os.Remove(p)

	if err := os.Symlink("../dm-9", p); err != nil {
		t.Fatal(err)
	}

	if _, err := ensureNode(dev, "vol", 253, 9); err != nil {
		t.Fatal(err)
	}

	checkNode(t, p, 253, 9)

	// Anything else is not ours to replace.
	os.Remove(p)

	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	if _, err := ensureNode(dev, "vol", 253, 9); err == nil || !strings.Contains(err.Error(), "is not a block device") {
		t.Errorf("over a regular file: %v", err)
	}
}

func TestRemoveNode(t *testing.T) {
	needRoot(t)

	dev := t.TempDir()
	p := filepath.Join(dev, "mapper", "vol")

	if err := removeNode(dev, "vol", 253, 1); err != nil {
		t.Errorf("no node: %v", err)
	}

	if _, err := ensureNode(dev, "vol", 253, 1); err != nil {
		t.Fatal(err)
	}

	// Another mapping's node (the name was reused) stays.
	if err := removeNode(dev, "vol", 253, 2); err != nil {
		t.Fatal(err)
	}

	checkNode(t, p, 253, 1)

	if err := removeNode(dev, "vol", 253, 1); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("node left: %v", err)
	}
}
