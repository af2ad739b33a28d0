package bootloader

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Platform is one of GRUB's image formats, with the Debian package that
// holds its modules and the modules an image of it embeds. Every image
// talosbox writes embeds all the modules it needs: no module directory is
// ever needed beside it, on BOOT or on the ISO.
type Platform struct {
	Format  string // grub-mkimage -O
	Dir     string // the modules, as Debian installs them
	Package string // the Debian package of Dir
	Modules []string
}

// bootModules read a GPT or MBR disk (or an ISO), find a filesystem by
// label and boot Linux from the menu of a grub.cfg.
var bootModules = []string{
	"part_gpt", "part_msdos", "ext2", "iso9660", "search", "search_label", "search_fs_uuid",
	"normal", "linux", "configfile", "echo", "test", "serial", "terminal", "sleep",
}

// The platforms: a BIOS disk's core.img (for the BIOS boot partition), the
// ISO's El Torito BIOS image, and the UEFI executable the ESP of a disk
// and the ISO's El Torito EFI image carry as EFI/BOOT/BOOTX64.EFI.
var (
	BIOS = Platform{Format: "i386-pc", Dir: "/usr/lib/grub/i386-pc", Package: "grub-pc-bin",
		Modules: append([]string{"biosdisk"}, bootModules...)}
	BIOSCDROM = Platform{Format: "i386-pc-eltorito", Dir: "/usr/lib/grub/i386-pc", Package: "grub-pc-bin",
		Modules: append([]string{"biosdisk"}, bootModules...)}
	UEFI = Platform{Format: "x86_64-efi", Dir: "/usr/lib/grub/x86_64-efi", Package: "grub-efi-amd64-bin",
		Modules: append([]string{"fat", "efi_gop", "efi_uga"}, bootModules...)}
)

// CoreModules are what a BIOS core.img embeds.
var CoreModules = BIOS.Modules

// EarlyConfig is embedded in the images of an installed disk: it points
// GRUB at BOOT, whose grub.cfg normal mode then reads.
const EarlyConfig = "search --no-floppy --label BOOT --set root\nset prefix=($root)/grub\n"

// EarlyConfigFor is the embedded config of an image that boots from the
// filesystem labelled label, its grub.cfg in dir (e.g. /boot/grub).
func EarlyConfigFor(label, dir string) string {
	return fmt.Sprintf("search --no-floppy --label %s --set root\nset prefix=($root)%s\n", label, dir)
}

// MakeImage runs grub-mkimage (Debian's grub-common) for p, with early
// embedded; dir overrides p.Dir when not empty. The output depends on
// its inputs alone: grub-mkimage stamps no time into it.
func MakeImage(ctx context.Context, p Platform, dir, early string) ([]byte, error) {
	if dir == "" {
		dir = p.Dir
	}

	tmp, err := os.MkdirTemp("", "talosbox-grub-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	cfg := filepath.Join(tmp, "early.cfg")
	if err := os.WriteFile(cfg, []byte(early), 0o644); err != nil {
		return nil, err
	}

	out := filepath.Join(tmp, "grub.img")
	args := append([]string{"-O", p.Format, "-d", dir, "-p", "/grub", "-c", cfg, "-o", out}, p.Modules...)

	if b, err := exec.CommandContext(ctx, "grub-mkimage", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("grub-mkimage -O %s (apt-get install grub-common %s): %w: %s", p.Format, p.Package, err, bytes.TrimSpace(b))
	}

	return os.ReadFile(out)
}
