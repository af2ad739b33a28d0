package bootmedia

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/talosbox/talosbox/internal/bootloader"
)

// Paths inside the ISO (Talos's names for the kernel and the initramfs).
const (
	isoKernel    = "boot/vmlinuz"
	isoInitramfs = "boot/initramfs.xz"
	isoGrubDir   = "boot/grub"
	isoEltorito  = "boot/grub/bios.img"
	isoEFIImage  = "boot/grub/efi.img"
)

// isoGrubCfg is the ISO's menu: one entry, the serial console as well as
// the screen (a machine without a serial port ignores it).
const isoGrubCfg = `set default=0
set timeout=3

serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console

menuentry "talosbox (%[1]s)" {
	set gfxmode=auto
	set gfxpayload=text
	linux /%[2]s %[3]s
	initrd /%[4]s
}
`

// ISO writes the hybrid ISO to out. It needs xorriso, grub-mkimage and
// GRUB's BIOS and UEFI modules (Debian's xorriso, grub-common, grub-pc-bin
// and grub-efi-amd64-bin).
func ISO(ctx context.Context, o Options, out string) error {
	if err := o.defaults(); err != nil {
		return fmt.Errorf("iso: %w", err)
	}

	cmdline, err := o.cmdline()
	if err != nil {
		return fmt.Errorf("iso: %w", err)
	}

	if _, err := exec.LookPath("xorriso"); err != nil {
		return fmt.Errorf("iso: xorriso (apt-get install xorriso): %w", err)
	}

	root, err := os.MkdirTemp(filepath.Dir(out), ".iso-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	volid := VolumeID(o.Version)
	early := bootloader.EarlyConfigFor(volid, "/"+isoGrubDir)

	if err := os.MkdirAll(filepath.Join(root, isoGrubDir), 0o755); err != nil {
		return err
	}

	fmt.Fprintf(o.Log, "iso: GRUB for BIOS (El Torito) and UEFI, finding the ISO by its label %s\n", volid)

	bios, err := bootloader.MakeImage(ctx, bootloader.BIOSCDROM, o.GrubBIOSDir, early)
	if err != nil {
		return fmt.Errorf("iso: %w", err)
	}

	efi, err := bootloader.MakeImage(ctx, bootloader.UEFI, o.GrubEFIDir, early)
	if err != nil {
		return fmt.Errorf("iso: %w", err)
	}

	efiImg, err := efiBootImage(efi)
	if err != nil {
		return fmt.Errorf("iso: %w", err)
	}

	files := map[string][]byte{
		isoEltorito:              bios,
		isoEFIImage:              efiImg,
		isoGrubDir + "/grub.cfg": fmt.Appendf(nil, isoGrubCfg, o.Version, isoKernel, cmdline, isoInitramfs),
	}

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			return err
		}
	}

	if err := copyFile(o.Kernel, filepath.Join(root, isoKernel)); err != nil {
		return fmt.Errorf("iso: %w", err)
	}

	if err := o.writeInitramfs(filepath.Join(root, isoInitramfs)); err != nil {
		return fmt.Errorf("iso: %w", err)
	}

	if err := stamp(root, o.Epoch); err != nil {
		return err
	}

	hybridMBR := filepath.Join(dirOr(o.GrubBIOSDir, bootloader.BIOSCDROM.Dir), "boot_hybrid.img")

	// grub-mkrescue's own hybrid layout (BIOS El Torito with GRUB's hybrid
	// MBR, the EFI image both as El Torito entry and as a partition), with
	// every date and the volume UUID taken from the epoch.
	epoch := o.Epoch.UTC()
	tmp := out + ".tmp"
	args := []string{
		"-as", "mkisofs", "-o", tmp, "-iso-level", "3", "-r", "-V", volid, "-volset", "talosbox " + o.Version,
		"--modification-date=" + epoch.Format("2006010215040500"),
		"-b", isoEltorito, "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table", "--grub2-boot-info",
		"--grub2-mbr", hybridMBR,
		"--efi-boot", isoEFIImage, "-efi-boot-part", "--efi-boot-image",
		"--protective-msdos-label",
		root,
	}

	cmd := exec.CommandContext(ctx, "xorriso", args...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(epoch.Unix(), 10))

	fmt.Fprintf(o.Log, "iso: xorriso: %s\n", out)

	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("iso: xorriso: %w: %s", err, bytes.TrimSpace(b))
	}

	return os.Rename(tmp, out)
}

// efiBootImage is the El Torito EFI image: the same FAT an installed
// disk's EFI partition holds, just large enough for BOOTX64.EFI (and at
// least FAT16's smallest).
func efiBootImage(grubEFI []byte) ([]byte, error) {
	size := max(int64(len(grubEFI))+512<<10, 4<<20)
	size = (size + 1<<20 - 1) &^ (1<<20 - 1)

	img, err := bootloader.RenderESP(grubEFI, size, 0)
	if err != nil {
		return nil, err
	}

	// The whole image: El Torito and the partition table size it by the
	// file.
	return append(img, make([]byte, size-int64(len(img)))...), nil
}

// stamp sets every file's and directory's times under root to t, which
// xorriso copies into the ISO.
func stamp(root string, t time.Time) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		return os.Chtimes(p, t, t)
	})
}

func dirOr(dir, def string) string {
	if dir != "" {
		return dir
	}

	return def
}
