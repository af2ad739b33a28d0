package initramfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/initramfs/initramfstest"
)

// fakeRuntime lays out what make images leaves in _out/images: a static
// runc and CNI plugin, and a runtime root whose program is dynamically
// linked (it brings its own loader), with a library link and a relative
// program link.
func fakeRuntime(t *testing.T, dir string) Runtime {
	t.Helper()

	initramfstest.Executable(t, filepath.Join(dir, "runtime", "runc"), false)
	initramfstest.Executable(t, filepath.Join(dir, "cni", "bin", "portmap"), false)

	root := filepath.Join(dir, "runtime", "root")
	initramfstest.Executable(t, filepath.Join(root, "usr", "sbin", "xtables-nft-multi"), true)
	initramfstest.Executable(t, filepath.Join(root, "lib64", "ld-linux-x86-64.so.2"), false)

	for link, target := range map[string]string{
		"usr/sbin/iptables":                         "xtables-nft-multi",
		"lib/x86_64-linux-gnu/ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(root, "etc", "protocols"), []byte("tcp\t6\tTCP\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	rt, err := RuntimeIn(dir)
	if err != nil {
		t.Fatal(err)
	}

	return rt
}

func TestRuntimeRootMergedIntoTheArchive(t *testing.T) {
	n := newFakeNode(t)
	o := n.options(None)
	o.Runtime = fakeRuntime(t, filepath.Join(n.dir, "images"))

	b, _ := build(t, o)

	seen := map[string]member{}
	for _, m := range readNewc(t, b) {
		seen[m.name] = m
	}

	for name, want := range map[string]os.FileMode{
		"bin/runc":                   0o755,
		"opt/cni/bin/portmap":        0o755,
		"usr/sbin/xtables-nft-multi": 0o755, // dynamic: allowed in the root, with its loader
		"lib64/ld-linux-x86-64.so.2": 0o755,
		"etc/protocols":              0o644, // the tree's own permissions
	} {
		if m, ok := seen[name]; !ok || !m.mode.IsRegular() || m.mode.Perm() != want {
			t.Errorf("%s: %+v, want a regular file with mode %o", name, m.mode, want)
		}
	}

	for name, target := range map[string]string{
		"usr/sbin/iptables":                         "xtables-nft-multi",
		"lib/x86_64-linux-gnu/ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2",
	} {
		if m := seen[name]; m.mode.Type() != os.ModeSymlink || m.data != target {
			t.Errorf("%s: %v -> %q, want a link to %q", name, m.mode, m.data, target)
		}
	}
}

func TestRuntimeRootRejects(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		dir := t.TempDir()
		fakeRuntime(t, dir)

		if err := os.RemoveAll(filepath.Join(dir, "runtime", "root")); err != nil {
			t.Fatal(err)
		}

		if _, err := RuntimeIn(dir); !errors.Is(err, ErrNoRuntime) || !strings.Contains(err.Error(), "make images") {
			t.Errorf("RuntimeIn without a root: %v", err)
		}
	})

	t.Run("a member already in the archive", func(t *testing.T) {
		n := newFakeNode(t)
		o := n.options(None)
		o.Runtime = fakeRuntime(t, filepath.Join(n.dir, "images"))

		// The tree must not replace the binary's own members.
		if err := os.Symlink("/nowhere", filepath.Join(o.Runtime.Root, "init")); err != nil {
			t.Fatal(err)
		}

		if _, err := Build(io.Discard, o); err == nil || !strings.Contains(err.Error(), "/init is in the archive already") {
			t.Errorf("a tree over /init: %v", err)
		}
	})
}
