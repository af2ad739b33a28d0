// Package bootmedia makes what a person boots a machine from: a hybrid
// ISO (BIOS and UEFI, CD-ROM or USB stick) and PXE assets, out of the
// kernel and the initramfs an installer image carries. Each artifact is a
// function of its inputs: the same kernel, initramfs, command line and
// epoch give the same bytes (SOURCE_DATE_EPOCH, as reproducible builds
// name it).
//
// The ISO boots GRUB on both firmwares, as Talos's GRUB ISO does: an El
// Torito BIOS image with a hybrid MBR (grub-pc-bin's boot_hybrid.img, for
// USB sticks) and an El Torito EFI image, a FAT holding BOOTX64.EFI that
// is also a partition of the hybrid disk. Both GRUB images embed every
// module they use and an early config that finds the ISO by its volume
// label, so the ISO carries no module directory. xorriso assembles it.
package bootmedia

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/bootloader"
	"github.com/talosbox/talosbox/internal/constants"
)

// DefaultCmdline is the kernel command line of the boot media before
// --extra-kernel-arg: the metal platform, and both consoles. The last
// console= is /dev/console, where machined logs, so a machine with a
// screen shows the node's log; a serial-console VM adds console=ttyS0.
// The platform comes first: talosbox imager --platform replaces it.
var DefaultCmdline = []string{"talos.platform=metal", "console=ttyS0", "console=tty0"}

// Options are the inputs of an artifact.
type Options struct {
	Kernel    string // a bzImage
	Initramfs string // the node's initramfs (any compression the kernel reads)
	Version   string // the talosbox version, for labels and menus
	// Cmdline is the whole kernel command line; nil means DefaultCmdline.
	Cmdline []string
	// Epoch stamps every date in the artifact (the commit's time in make
	// iso); the zero time is the Unix epoch.
	Epoch time.Time
	// GrubBIOSDir and GrubEFIDir override where GRUB's modules are
	// (bootloader.BIOS.Dir, bootloader.UEFI.Dir).
	GrubBIOSDir, GrubEFIDir string
	// EmbeddedConfig is a machine config baked into the initramfs (Talos's
	// imager --embedded-config-path): a second cpio archive after the
	// initramfs, holding constants.EmbeddedConfigPath, which the node
	// takes when nothing is persisted yet.
	EmbeddedConfig []byte
	// Log gets a line per step; nil is quiet.
	Log io.Writer
}

func (o *Options) defaults() error {
	if o.Kernel == "" || o.Initramfs == "" {
		return fmt.Errorf("a kernel and an initramfs are required")
	}

	for _, f := range []string{o.Kernel, o.Initramfs} {
		if _, err := os.Stat(f); err != nil {
			return err
		}
	}

	if o.Cmdline == nil {
		o.Cmdline = DefaultCmdline
	}

	if o.Version == "" {
		o.Version = "unknown"
	}

	if o.Log == nil {
		o.Log = io.Discard
	}

	if o.Epoch.IsZero() {
		o.Epoch = time.Unix(0, 0).UTC()
	}

	return nil
}

// cmdline joins the command line, refusing what grub.cfg (or an iPXE
// script, whose $ and # mean as much) would change: the installed disk's
// grub.cfg carries it on, under the same rule.
func (o *Options) cmdline() (string, error) {
	s := strings.Join(o.Cmdline, " ")
	if err := bootloader.CheckCmdline(s); err != nil {
		return "", fmt.Errorf("kernel command line: %w", err)
	}

	return s, nil
}

// VolumeID is the ISO's volume label: TALOSBOX_ and the version, in the
// 32 characters of [A-Z0-9_] ISO 9660 allows (Talos's VolumeID does the
// same). GRUB finds the ISO by it.
func VolumeID(version string) string {
	id := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		case r == '-' || r == '.' || r == '+':
			return '_'
		}

		return -1
	}, "TALOSBOX_"+version)

	return id[:min(len(id), 32)]
}

// writeInitramfs copies the initramfs to dst and appends the embedded
// config as an archive of its own: the kernel unpacks concatenated
// archives one after the other, each compressed or not, so the node's
// zstd initramfs is left byte for byte as it was.
func (o *Options) writeInitramfs(dst string) error {
	if err := copyFile(o.Initramfs, dst); err != nil {
		return err
	}

	if o.EmbeddedConfig == nil {
		return nil
	}

	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}

	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}

	// Archives start on a 4-byte boundary; the kernel skips the zeros.
	pad := make([]byte, (4-st.Size()%4)%4)

	if _, err := f.Write(pad); err != nil {
		f.Close()
		return err
	}

	// Records of their own rather than an initramfs.Archive, which would
	// make dev/console and the mount points again over the first
	// archive's.
	mtime := uint32(o.Epoch.Unix())
	cw := initramfs.NewWriter(f)
	name := strings.TrimPrefix(constants.EmbeddedConfigPath, "/")

	var dirs []string
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}

	for _, d := range dirs {
		if err := cw.WriteRecord(initramfs.Record{Name: d, Mode: 0o040755, MTime: mtime}); err != nil {
			f.Close()
			return err
		}
	}

	rec := initramfs.Record{Name: name, Mode: 0o100600, MTime: mtime, Size: int64(len(o.EmbeddedConfig)), Data: bytes.NewReader(o.EmbeddedConfig)}
	if err := cw.WriteRecord(rec); err != nil {
		f.Close()
		return err
	}

	if err := cw.Close(); err != nil {
		f.Close()
		return err
	}

	return f.Close()
}

// copyFile copies src to dst with mode 0644.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()

	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}

	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}

	return out.Close()
}
