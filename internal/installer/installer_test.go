package installer_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/pe"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/installer"
	"github.com/talosbox/talosbox/internal/registry"
)

// build makes an installer image with GRUB's real images (grub-pc-bin, as
// make installer needs) around a stand-in kernel and initramfs.
func build(t *testing.T) (kernel, initrd []byte, o installer.BuildOptions) {
	t.Helper()

	dir := t.TempDir()
	kernel = bytes.Repeat([]byte("bzImage "), 4096)
	initrd = bytes.Repeat([]byte("070701"), 10000)

	o = installer.BuildOptions{Kernel: filepath.Join(dir, "vmlinuz"), Initramfs: filepath.Join(dir, "initramfs"), Version: "v9.9.9"}
	if err := os.WriteFile(o.Kernel, kernel, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(o.Initramfs, initrd, 0o644); err != nil {
		t.Fatal(err)
	}

	return kernel, initrd, o
}

func TestBuildAndUnpack(t *testing.T) {
	kernel, initrd, o := build(t)

	img, err := installer.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}

	again, err := installer.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}

	d1, _ := img.Digest()
	if d2, _ := again.Digest(); d1 != d2 {
		t.Errorf("two builds of the same inputs differ: %s, %s", d1, d2)
	}

	got := map[string][]byte{}

	a, err := installer.Unpack(img, func(name string, r io.Reader) error {
		b, err := io.ReadAll(r)
		got[name] = b

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(got[installer.KernelPath], kernel) || !bytes.Equal(got[installer.InitramfsPath], initrd) {
		t.Error("the kernel or the initramfs came back changed")
	}

	boot, err := os.ReadFile(filepath.Join(installer.DefaultGrubDir, "boot.img"))
	if err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(a.BootImg, boot) || a.Version != "v9.9.9" {
		t.Errorf("boot.img %d bytes (want Debian's %d), version %q", len(a.BootImg), len(boot), a.Version)
	}

	// core.img as grub-mkimage makes it: its blocklist counts its sectors.
	if n := len(a.CoreImg); n < 20<<10 || int(a.CoreImg[508])|int(a.CoreImg[509])<<8 != (n+511)/512-1 {
		t.Errorf("core.img: %d bytes, blocklist length %d", n, int(a.CoreImg[508])|int(a.CoreImg[509])<<8)
	}

	// BOOTX64.EFI: a PE32+ image for x86-64 (grub-mkimage -O x86_64-efi)
	// that finds BOOT by its label.
	if f, err := pe.NewFile(bytes.NewReader(a.EFIImg)); err != nil {
		t.Errorf("BOOTX64.EFI (%d bytes): %v", len(a.EFIImg), err)
	} else if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
		t.Errorf("BOOTX64.EFI is for machine %#x, want x86-64", f.Machine)
	} else if !bytes.Contains(a.EFIImg, []byte("search --no-floppy --label BOOT --set root")) {
		t.Error("BOOTX64.EFI does not embed the early config that finds BOOT")
	}
}

func TestUnpackRefusesOtherImages(t *testing.T) {
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}

	_, err = installer.Unpack(img, func(string, io.Reader) error { return nil })
	if !errors.Is(err, installer.ErrNotInstaller) || !strings.Contains(err.Error(), "no /usr/install/amd64/vmlinuz") {
		t.Fatalf("an image without a kernel: %v", err)
	}

	if _, err := installer.Unpack(empty.Image, func(string, io.Reader) error { return nil }); !errors.Is(err, installer.ErrNotInstaller) {
		t.Fatalf("an empty image: %v", err)
	}
}

// serve puts an installer image into a layout under ref and serves it
// with talosbox's registry (what talosctl image cache-serve runs).
func serve(t *testing.T, ref string, o installer.BuildOptions) string {
	t.Helper()

	img, err := installer.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if _, err := imagestore.Write(dir, []imagestore.Named{{Ref: ref, Image: img}}); err != nil {
		t.Fatal(err)
	}

	srv, err := registry.New(dir, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}

	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	return hs.Listener.Addr().String()
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	addr := l.Addr().String()
	l.Close()

	return addr
}

func TestPullThroughMirrors(t *testing.T) {
	_, _, o := build(t)
	addr := serve(t, "ghcr.io/talosbox/installer:v9.9.9", o)
	dead := closedPort(t)

	mirrors := func(skip bool, eps ...string) *configs.RegistriesConfig {
		return &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{"ghcr.io": {Endpoints: eps, SkipFallback: skip}}}
	}

	var logb bytes.Buffer

	img, err := installer.Pull(context.Background(), "ghcr.io/talosbox/installer:v9.9.9", mirrors(true, "http://"+dead, "http://"+addr), &logb)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(logb.String(), "pulled ghcr.io/talosbox/installer:v9.9.9 from http://"+addr) {
		t.Errorf("log: %q", logb.String())
	}

	if _, err := installer.Unpack(img, func(string, io.Reader) error { return nil }); err != nil {
		t.Fatalf("unpack the pulled image: %v", err)
	}

	// "*" mirrors every registry.
	star := &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{"*": {Endpoints: []string{"http://" + addr}, SkipFallback: true}}}
	if _, err := installer.Pull(context.Background(), "ghcr.io/talosbox/installer:v9.9.9", star, io.Discard); err != nil {
		t.Fatalf("through *: %v", err)
	}

	for name, tc := range map[string]struct {
		ref  string
		reg  *configs.RegistriesConfig
		want []string
	}{
		"a tag nobody has":  {"ghcr.io/talosbox/installer:v0.0.0-none", mirrors(true, "http://"+addr), []string{"pull ghcr.io/talosbox/installer:v0.0.0-none", "MANIFEST_UNKNOWN"}},
		"every mirror down": {"ghcr.io/talosbox/installer:v9.9.9", mirrors(true, "http://"+dead), []string{"http://" + dead + ":", "connection refused"}},
		"a bad reference":   {"ghcr.io/Talos Box", nil, []string{`installer image "ghcr.io/Talos Box"`}},
		"an endpoint path":  {"ghcr.io/talosbox/installer:v9.9.9", mirrors(true, "http://"+addr+"/cache"), []string{"a path (/cache) is not supported"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := installer.Pull(context.Background(), tc.ref, tc.reg, io.Discard)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("got %v, want %q", err, w)
				}
			}
		})
	}
}

// With Binary, the image carries it and the ONBUILD triggers that run it;
// a node's unpack passes it by.
func TestBuildWithOnBuild(t *testing.T) {
	_, _, o := build(t)

	o.Binary = filepath.Join(t.TempDir(), "talosbox")
	if err := os.WriteFile(o.Binary, []byte("\x7fELF static"), 0o755); err != nil {
		t.Fatal(err)
	}

	img, err := installer.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}

	if !slices.Equal(cf.Config.OnBuild, installer.OnBuild) || !strings.Contains(strings.Join(cf.Config.OnBuild, "\n"), `RUN ["/bin/talosbox", "imager", "customize"]`) {
		t.Errorf("OnBuild: %q", cf.Config.OnBuild)
	}

	rc := mutate.Extract(img)
	defer rc.Close()

	tr := tar.NewReader(rc)
	found := false

	for {
		h, err := tr.Next()
		if err != nil {
			break
		}

		if h.Name == installer.BinaryPath {
			found = h.Mode == 0o755
		}
	}

	if !found {
		t.Errorf("no executable /%s in the image", installer.BinaryPath)
	}

	if _, err := installer.Unpack(img, func(string, io.Reader) error { return nil }); err != nil {
		t.Errorf("unpack: %v", err)
	}
}

// Unpack reads the layers from the top: a file comes from the highest
// layer that has it, a whiteout hides a lower one, and a layer below
// everything it needs (here not even a tar) is never read.
func TestUnpackReadsFromTheTop(t *testing.T) {
	kernel, _, o := build(t)

	base, err := installer.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}

	layer := func(entries map[string]string) v1.Layer {
		t.Helper()

		var buf bytes.Buffer

		tw := tar.NewWriter(&buf)
		for name, data := range entries {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
				t.Fatal(err)
			}

			tw.Write([]byte(data)) //nolint:errcheck // a buffer
		}

		tw.Close()

		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
		if err != nil {
			t.Fatal(err)
		}

		return l
	}

	garbage, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("not a tar "), 1000))), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	baseLayers, err := base.Layers()
	if err != nil {
		t.Fatal(err)
	}

	upper := layer(map[string]string{installer.InitramfsPath: "the customized initramfs", "usr/install/x86_64-efi/.wh.BOOTX64.EFI": ""})

	img, err := mutate.AppendLayers(empty.Image, append(append([]v1.Layer{garbage}, baseLayers...), upper)...)
	if err != nil {
		t.Fatal(err)
	}

	got := map[string][]byte{}

	a, err := installer.Unpack(img, func(name string, r io.Reader) error {
		b, err := io.ReadAll(r)
		got[name] = b

		return err
	})
	if err != nil {
		t.Fatalf("unpack read the layer below what it needs, or failed: %v", err)
	}

	if string(got[installer.InitramfsPath]) != "the customized initramfs" || !bytes.Equal(got[installer.KernelPath], kernel) {
		t.Errorf("initramfs %q, kernel %d bytes: want the top layer's and the base's", got[installer.InitramfsPath], len(got[installer.KernelPath]))
	}

	if a.EFIImg != nil || a.BootImg == nil {
		t.Errorf("the whited-out BOOTX64.EFI was taken (%d bytes), or boot.img was not (%d)", len(a.EFIImg), len(a.BootImg))
	}
}
