package installer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/initramfs/initramfstest"
	"github.com/talosbox/talosbox/internal/installer"
)

// write makes p (and its parents) hold data.
func write(t *testing.T, p string, data []byte, mode os.FileMode) {
	t.Helper()

	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
}

// The seeds' flow on an installer's files, as its ONBUILD trigger runs
// it: RM goes first, the customization's files (a file, a symlink, a
// kernel module depending on one the image has) are added, modules.dep
// lists the new module with its dependency, and the seed's kernel path
// replaces the image's kernel.
func TestCustomize(t *testing.T) {
	const rel = "6.1.0-test-amd64"

	root := t.TempDir()

	a := initramfs.New()
	a.Bytes("init", []byte("talosbox"), 0o755)
	a.Bytes("usr/share/doc/README", []byte("docs"), 0o644)
	a.Bytes("lib/modules/"+rel+"/kernel/a.ko", initramfstest.Module("name=a\x00depends=\x00"), 0o644)
	a.Bytes("lib/modules/"+rel+"/modules.dep", []byte("kernel/a.ko:\n"), 0o644)

	f, err := os.Create(filepath.Join(mkdir(t, root, "usr/install/amd64"), "initramfs.xz"))
	if err != nil {
		t.Fatal(err)
	}

	if err := a.WriteCompressed(f, initramfs.Zstd); err != nil {
		t.Fatal(err)
	}

	f.Close()

	write(t, filepath.Join(root, installer.KernelPath), []byte("stock kernel"), 0o644)
	write(t, filepath.Join(root, installer.SeedKernelPath), []byte("custom kernel"), 0o644)

	custom := filepath.Join(root, installer.CustomizationDir)
	write(t, filepath.Join(custom, "usr/local/share/hello.txt"), []byte("hello\n"), 0o644)
	write(t, filepath.Join(custom, "lib/modules", rel, "extra/b.ko"), initramfstest.Module("name=b\x00depends=a\x00"), 0o644)

	if err := os.Symlink("/usr/local/share/hello.txt", filepath.Join(custom, "usr/local/share/hi")); err != nil {
		t.Fatal(err)
	}

	var log strings.Builder

	c := installer.Customization{Root: root, Dir: custom, RM: []string{"/usr/share/doc", "/not/there"}, Log: &log}
	if err := installer.Customize(c); err != nil {
		t.Fatal(err)
	}

	f, err = os.Open(filepath.Join(root, installer.InitramfsPath))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	got, err := initramfs.Read(f)
	if err != nil {
		t.Fatal(err)
	}

	if b, err := got.ReadFile("usr/local/share/hello.txt"); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt: %q, %v", b, err)
	}

	if got.Has("usr/share/doc/README") || !got.Has("usr/share") || !got.Has("init") || !got.Has("usr/local/share/hi") {
		t.Errorf("members: %v", got.Names())
	}

	if dep, err := got.ReadFile("lib/modules/" + rel + "/modules.dep"); err != nil ||
		!strings.Contains(string(dep), "extra/b.ko: kernel/a.ko\n") && !strings.Contains(string(dep), "extra/b.ko:kernel/a.ko\n") {
		t.Errorf("modules.dep: %q, %v: want b with its dependency a", dep, err)
	}

	if k, err := os.ReadFile(filepath.Join(root, installer.KernelPath)); err != nil || string(k) != "custom kernel" {
		t.Errorf("the kernel: %q, %v: want the customization's", k, err)
	}

	if _, err := os.Stat(custom); !os.IsNotExist(err) {
		t.Errorf("the customization stage's copy is left: %v", err)
	}

	for _, want := range []string{"removed /usr/share/doc", "RM /not/there: not in the initramfs", "added 2 files", "modules.dep lists 2 modules"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

func TestCustomizeRefuses(t *testing.T) {
	root := t.TempDir()

	if err := installer.Customize(installer.Customization{Root: root}); err == nil || !strings.Contains(err.Error(), "initramfs.xz") {
		t.Errorf("no initramfs: %v", err)
	}

	a := initramfs.New()
	a.Bytes("init", []byte("talosbox"), 0o755)

	if err := a.WriteFile(filepath.Join(mkdir(t, root, "usr/install/amd64"), "initramfs.xz")); err != nil {
		t.Fatal(err)
	}

	for _, rm := range []string{"/", "/init", "../.."} {
		err := installer.Customize(installer.Customization{Root: root, RM: []string{rm}})
		if err == nil || !strings.Contains(err.Error(), "the node could not boot") {
			t.Errorf("RM %q: %v", rm, err)
		}
	}
}

func mkdir(t *testing.T, root, rel string) string {
	t.Helper()

	p := filepath.Join(root, rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}

	return p
}
