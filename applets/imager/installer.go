package imager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/imagebuild"
	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/installer"
	"github.com/talosbox/talosbox/internal/version"
)

const installerUsage = `Usage: talosbox imager installer [--out DIR] [--kernel-dir DIR] [--initramfs FILE] [--tag REF]

Build the installer image a node installs and upgrades from: the kernel,
the initramfs (this binary as /init) and GRUB's BIOS and UEFI images
(boot.img, and core.img and BOOTX64.EFI made by grub-mkimage from Debian's
grub-pc-bin and grub-efi-amd64-bin), under /usr/install as in Talos's
installer. It is written to the OCI layout DIR/oci, the image cache that
talosctl image cache-serve serves, as --tag (default
ghcr.io/talosbox/installer:<this version>).

The image also holds this binary (/bin/talosbox) and ONBUILD triggers, so
that the seeds' Dockerfile customizes it: a stage named customization
holds files for the node's root filesystem, --build-arg RM="PATH..."
removes paths first, a kernel copied to /usr/install/vmlinuz replaces the
image's; the build's result is an installer talosctl upgrade installs:

  FROM scratch AS customization
  COPY hello.txt /usr/local/share/hello.txt
  FROM ghcr.io/talosbox/installer:<version>

  make installer          builds the initramfs (zstd) and this image
  talosctl upgrade -n NODE --image ghcr.io/talosbox/installer:vX

Flags:
`

func installerMain(ctx context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("imager installer", installerUsage, env)

	var out, kernelDir, kernelVersion, tag string

	o := installer.BuildOptions{Version: version.Tag}

	fs.StringVar(&out, "out", filepath.Join("_out", "images"), "the image cache `DIR` (the layout is DIR/oci)")
	fs.StringVar(&kernelDir, "kernel-dir", filepath.Join("_out", "kernel"), "unpacked kernel package (scripts/fetch-kernel.sh)")
	fs.StringVar(&kernelVersion, "kernel-version", "", "kernel release (default: the only one in --kernel-dir)")
	fs.StringVar(&o.Initramfs, "initramfs", filepath.Join("_out", "initramfs.cpio.zst"), "the node's initramfs (make initramfs INITRAMFS_FLAGS=--compress=zstd)")
	fs.StringVar(&o.GrubDir, "grub-dir", installer.DefaultGrubDir, "GRUB's i386-pc directory (Debian's grub-pc-bin)")
	fs.StringVar(&tag, "tag", installer.DefaultRepository+":"+version.Tag, "the image's reference in the cache")
	fs.StringVar(&o.Version, "image-version", version.Tag, "the talosbox version the image's label names")

	self, _ := os.Executable()
	fs.StringVar(&o.Binary, "binary", self, "the static talosbox the image's ONBUILD customization runs (empty: none, and no ONBUILD triggers)")

	if code, done := fs.Parse(args); done {
		return code
	}

	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "imager installer: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	}

	k, err := initramfs.FindKernel(kernelDir, kernelVersion)
	if err != nil {
		fmt.Fprintf(env.Stderr, "imager installer: %v\n", err)
		return 1
	}

	o.Kernel = k.Image

	img, err := installer.Build(ctx, o)
	if err != nil {
		fmt.Fprintf(env.Stderr, "imager installer: %v\n", err)
		return 1
	}

	if _, err := imagestore.Write(imagebuild.LayoutDir(out), []imagestore.Named{{Ref: tag, Image: img}}); err != nil {
		fmt.Fprintf(env.Stderr, "imager installer: %v\n", err)
		return 1
	}

	d, _ := img.Digest()
	fmt.Fprintf(env.Stdout, "imager: installer %s (%s) in %s\n", tag, d, imagebuild.LayoutDir(out))

	return 0
}
