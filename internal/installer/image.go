// Package installer is talosbox's installer image: an OCI image holding
// what a node needs to boot from its own disk (the kernel, the initramfs
// with this binary as /init, and GRUB's BIOS and UEFI images), and this
// binary with ONBUILD triggers that customize it (customize.go), built by
// `make installer`, pulled by a node on install and upgrade, and unpacked
// onto BOOT.
//
// The files sit where Talos's installer keeps them:
//
//	/usr/install/amd64/vmlinuz
//	/usr/install/amd64/initramfs.xz    (the name Talos keeps for any compression)
//	/usr/install/i386-pc/boot.img      GRUB's MBR code
//	/usr/install/i386-pc/core.img      GRUB's core, made by grub-mkimage
//	/usr/install/x86_64-efi/BOOTX64.EFI  GRUB for UEFI, made by grub-mkimage,
//	                                   for the EFI partition (optional: images
//	                                   from before UEFI lack it)
//	/bin/talosbox                      this binary, which the ONBUILD triggers
//	                                   run (optional)
package installer

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/talosbox/talosbox/internal/bootloader"
)

// Paths of the assets in the image.
const (
	KernelPath    = "usr/install/amd64/vmlinuz"
	InitramfsPath = "usr/install/amd64/initramfs.xz"
	BootImgPath   = "usr/install/i386-pc/boot.img"
	CoreImgPath   = "usr/install/i386-pc/core.img"
	EFIImgPath    = "usr/install/x86_64-efi/BOOTX64.EFI"
)

// DefaultRepository is where talosbox's installer images are named.
const DefaultRepository = "ghcr.io/talosbox/installer"

// VersionLabel carries the talosbox version the image installs.
const VersionLabel = "org.opencontainers.image.version"

// DefaultGrubDir is where Debian's grub-pc-bin keeps the i386-pc images
// and modules.
var DefaultGrubDir = bootloader.BIOS.Dir

// BuildOptions are the inputs of an installer image.
type BuildOptions struct {
	Kernel    string // a bzImage
	Initramfs string // the node's initramfs, any compression the kernel reads
	Version   string // the talosbox version inside, for the label
	// GrubDir holds boot.img and the modules grub-mkimage builds core.img
	// from; empty means DefaultGrubDir.
	GrubDir string
	// GrubEFIDir holds the x86_64-efi modules BOOTX64.EFI is made from;
	// empty means bootloader.UEFI.Dir (Debian's grub-efi-amd64-bin).
	GrubEFIDir string
	// Created is the image's creation time; the zero time keeps builds of
	// the same inputs identical.
	Created time.Time
	// Binary, when set, is this binary (static), kept at BinaryPath with
	// the OnBuild triggers, so that a Dockerfile FROM the image can
	// customize it (customize.go). Empty leaves both out.
	Binary string
}

// Build makes the installer image. It runs grub-mkimage (Debian's
// grub-common) to make core.img.
func Build(ctx context.Context, o BuildOptions) (v1.Image, error) {
	if o.GrubDir == "" {
		o.GrubDir = DefaultGrubDir
	}

	bootImg, err := os.ReadFile(filepath.Join(o.GrubDir, "boot.img"))
	if err != nil {
		return nil, fmt.Errorf("installer: GRUB's boot.img (apt-get install grub-pc-bin): %w", err)
	}

	coreImg, err := bootloader.MakeImage(ctx, bootloader.BIOS, o.GrubDir, bootloader.EarlyConfig)
	if err != nil {
		return nil, fmt.Errorf("installer: %w", err)
	}

	efiImg, err := bootloader.MakeImage(ctx, bootloader.UEFI, o.GrubEFIDir, bootloader.EarlyConfig)
	if err != nil {
		return nil, fmt.Errorf("installer: %w", err)
	}

	assets, err := tarLayer(o.Created, []string{"usr/", "usr/install/", "usr/install/amd64/", "usr/install/i386-pc/", "usr/install/x86_64-efi/"},
		[]layerFile{
			{name: KernelPath, src: o.Kernel},
			{name: InitramfsPath, src: o.Initramfs},
			{name: BootImgPath, data: bootImg},
			{name: CoreImgPath, data: coreImg},
			{name: EFIImgPath, data: efiImg},
		})
	if err != nil {
		return nil, err
	}

	// The binary gets a layer of its own, below the assets: a node reads
	// the layers from the top and stops once it has the assets
	// (Unpack), so it never downloads or unpacks the binary.
	var layers []v1.Layer

	if o.Binary != "" {
		bin, err := tarLayer(o.Created, []string{path.Dir(BinaryPath) + "/"}, []layerFile{{name: BinaryPath, src: o.Binary, mode: 0o755}})
		if err != nil {
			return nil, err
		}

		layers = append(layers, bin)
	}

	layers = append(layers, assets)

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)

	if img, err = mutate.AppendLayers(img, layers...); err != nil {
		return nil, err
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}

	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = "amd64", "linux", v1.Time{Time: o.Created}
	cf.Config.Labels = map[string]string{VersionLabel: o.Version}

	if o.Binary != "" {
		cf.Config.OnBuild = OnBuild
	}

	return mutate.ConfigFile(img, cf)
}

// layerFile is a file of a layer: data, or the file at src.
type layerFile struct {
	name string
	src  string
	data []byte
	mode int64 // 0644 when zero
}

// tarLayer makes an OCI layer of dirs and files, every time created.
func tarLayer(created time.Time, dirs []string, files []layerFile) (v1.Layer, error) {
	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)

	for _, dir := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: created}); err != nil {
			return nil, err
		}
	}

	for _, f := range files {
		data := f.data
		if f.src != "" {
			var err error
			if data, err = os.ReadFile(f.src); err != nil {
				return nil, fmt.Errorf("installer: %w", err)
			}
		}

		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}

		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: mode, Size: int64(len(data)), ModTime: created}); err != nil {
			return nil, err
		}

		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}

	if err := tw.Close(); err != nil {
		return nil, err
	}

	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
}
