package imager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/bootmedia"
	"github.com/talosbox/talosbox/internal/render"
	"github.com/talosbox/talosbox/internal/version"
)

const mediaUsage = `Usage: talosbox imager iso [--out FILE] [flags]
       talosbox imager metal [--out FILE] [flags]
       talosbox imager pxe [--out DIR] [--base-url URL] [flags]

Build boot media from the kernel and the node's initramfs (the ones the
installer image carries; make installer builds the initramfs):

  iso   a hybrid ISO that boots on BIOS and UEFI, from a CD-ROM or a USB
        stick (dd it), into maintenance mode, waiting for
        talosctl apply-config --insecure; a config with machine.install
        installs the node to its disk from there
  metal a raw disk image that is already installed (metal-amd64.raw,
        compressed with zstd when --out ends in .zst): GPT, GRUB for BIOS
        and UEFI, BOOT with slot A; write it to a disk (dd, qemu-img, a
        cloud's image import) and boot it on either firmware. On its first
        boot the node grows EPHEMERAL to the end of the disk, then takes
        its config as a booted ISO does (maintenance mode, talos.config=,
        or a NoCloud seed with --platform nocloud)
  pxe   the kernel (vmlinuz-amd64), the initramfs (initramfs-amd64.xz) and
        boot.ipxe, an iPXE script that boots them: serve the directory over
        HTTP or TFTP and chain boot.ipxe

The kernel command line is ` + "`talos.platform=metal console=ttyS0 console=tty0`" + `
(--platform nocloud for talos.platform=nocloud: config, addresses and
hostname from a cidata seed) plus every --extra-kernel-arg; --config-url adds talos.config=URL, so the
node fetches its config at boot; --embedded-config-path bakes a config into
the initramfs (validated first), which the node takes when nothing is
persisted, as Talos's imager does. Every date in the output is --epoch (default
$SOURCE_DATE_EPOCH, else this build's commit time): the same inputs give the
same bytes.

  make iso    _out/talosbox-amd64.iso
  make disk-image  _out/metal-amd64.raw.zst
  make pxe    _out/pxe/

Flags:
`

// argList is a flag that may be given again, each occurrence one value
// (a kernel argument may hold a comma: console=ttyS0,115200).
type argList []string

func (l *argList) String() string     { return strings.Join(*l, " ") }
func (l *argList) Set(v string) error { *l = append(*l, strings.Fields(v)...); return nil }

func mediaMain(ctx context.Context, kind string, args []string, env applet.Env) int {
	name := "imager " + kind
	fs := applet.NewFlags(name, mediaUsage, env)

	var (
		o                         bootmedia.Options
		out, kernelDir, kernelVer string
		baseURL, configURL, epoch string
		embedded, platformName    string
		extra                     argList
	)

	defOut := filepath.Join("_out", "talosbox-amd64.iso")

	switch kind {
	case "pxe":
		defOut = filepath.Join("_out", "pxe")
	case "metal":
		defOut = filepath.Join("_out", bootmedia.DiskImageName+".zst")
	}

	fs.StringVar(&out, "out", defOut, "where to write the ISO or the disk image (a file; .zst compresses the image) or the PXE assets (a directory)")
	fs.StringVar(&kernelDir, "kernel-dir", filepath.Join("_out", "kernel"), "unpacked kernel package (scripts/fetch-kernel.sh)")
	fs.StringVar(&kernelVer, "kernel-version", "", "kernel release (default: the only one in --kernel-dir)")
	fs.StringVar(&o.Initramfs, "initramfs", filepath.Join("_out", "initramfs.cpio.zst"), "the node's initramfs (make installer builds it)")
	fs.StringVar(&o.Version, "image-version", version.Tag, "the talosbox version the menu and the ISO's label name")
	fs.Var(&extra, "extra-kernel-arg", "a kernel argument to add (may be given again)")
	fs.StringVar(&platformName, "platform", "metal", "talos.platform= of the media: metal, or nocloud (the config, addresses and hostname from a cidata seed)")
	fs.StringVar(&configURL, "config-url", "", "the node fetches its machine config from `URL` at boot (talos.config=)")
	fs.StringVar(&embedded, "embedded-config-path", "", "bake the machine config in `FILE` into the initramfs (it holds the cluster's secrets: keep the artifact private)")
	fs.StringVar(&epoch, "epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time of every date in the output (default: $SOURCE_DATE_EPOCH, else the commit's time)")
	fs.StringVar(&o.GrubBIOSDir, "grub-dir", "", "GRUB's i386-pc modules (default: Debian's grub-pc-bin)")
	fs.StringVar(&o.GrubEFIDir, "grub-efi-dir", "", "GRUB's x86_64-efi modules (default: Debian's grub-efi-amd64-bin)")

	if kind == "pxe" {
		fs.StringVar(&baseURL, "base-url", "", "put `URL` before the file names in boot.ipxe (default: relative to the script's own URL)")
	}

	if code, done := fs.Parse(args); done {
		return code
	}

	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "%s: unexpected argument %q (see --help)\n", name, fs.Arg(0))
		return 2
	}

	t, err := epochTime(epoch)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: --epoch: %v\n", name, err)
		return 2
	}

	if platformName != "metal" && platformName != "nocloud" {
		fmt.Fprintf(env.Stderr, "%s: --platform %q: metal or nocloud\n", name, platformName)
		return 2
	}

	o.Epoch = t
	o.Cmdline = append([]string{"talos.platform=" + platformName}, bootmedia.DefaultCmdline[1:]...)
	o.Cmdline = append(o.Cmdline, extra...)

	if configURL != "" {
		o.Cmdline = append(o.Cmdline, "talos.config="+configURL)
	}

	if embedded != "" {
		if o.EmbeddedConfig, err = loadEmbedded(embedded); err != nil {
			fmt.Fprintf(env.Stderr, "%s: --embedded-config-path: %v\n", name, err)
			return 1
		}
	}

	k, err := initramfs.FindKernel(kernelDir, kernelVer)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		return 1
	}

	o.Kernel, o.Log = k.Image, env.Stdout
	start := time.Now()

	switch kind {
	case "pxe":
		err = bootmedia.PXE(o, out, baseURL)
	case "metal":
		err = bootmedia.DiskImage(ctx, o, out)
	default:
		err = bootmedia.ISO(ctx, o, out)
	}

	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		return 1
	}

	size := ""
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
		size = fmt.Sprintf(", %.1f MiB", float64(st.Size())/(1<<20))
	}

	fmt.Fprintf(env.Stdout, "imager: %s %s (kernel %s%s) in %s\n", kind, out, k.Release, size, time.Since(start).Round(100*time.Millisecond))

	return 0
}

// loadEmbedded reads a config to embed and refuses one the node would
// refuse: a baked-in config is only found wrong at the machine's console.
func loadEmbedded(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}

	// The node's own validation (render.Load: configs' rules and every
	// renderer). Warnings are the node's to print; errors would stop its
	// boot.
	if _, _, err := render.Load(data, configs.ModeMetal); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	return data, nil
}

// epochTime reads --epoch: Unix seconds, or empty for the commit's time
// this binary was built from (the Unix epoch when that is unknown).
func epochTime(s string) (time.Time, error) {
	if s == "" {
		if t, err := time.Parse(time.RFC3339, version.Date); err == nil {
			return t, nil
		}

		return time.Unix(0, 0).UTC(), nil
	}

	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not Unix seconds", s)
	}

	return time.Unix(n, 0).UTC(), nil
}
