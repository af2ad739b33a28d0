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
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// DefaultCmdline is the kernel command line of the boot media before
// --extra-kernel-arg: the metal platform, and both consoles. The last
// console= is /dev/console, where machined logs, so a machine with a
// screen shows the node's log; a serial-console VM adds console=ttyS0.
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

	return nil
}

// cmdline joins the command line, refusing what grub.cfg or an iPXE
// script would change.
func (o *Options) cmdline() (string, error) {
	s := strings.Join(o.Cmdline, " ")
	if i := strings.IndexAny(s, "\"'\\$;|&<>{}#\n\r\t\x00"); i >= 0 {
		return "", fmt.Errorf("kernel command line: %q cannot be written into a boot loader's config", s[i:i+1])
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
