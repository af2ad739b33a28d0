package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/boot/qemu"
)

func TestGuestRebooted(t *testing.T) {
	for name, tc := range map[string]struct {
		console string
		want    bool
	}{
		"reboot":               {"[talos] rebooting\n[   11.0] reboot: Restarting system\n", true},
		"power off":            {"[talos] powering off\n[   11.0] reboot: Power down\n", false},
		"halt":                 {"[   11.0] reboot: System halted\n", false},
		"reboot, then off":     {"reboot: Restarting system\nGNU GRUB\n[talos] powering off\nreboot: Power down\n", false},
		"off, then reboot":     {"reboot: Power down\nSeaBIOS\nreboot: Restarting system\n", true},
		"QEMU died mid-boot":   {"[talos] machined v1\n", false},
		"no console (no file)": {"", false},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "console.log")
			if tc.console != "" {
				if err := os.WriteFile(p, []byte(tc.console), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			if got := guestRebooted(p); got != tc.want {
				t.Fatalf("guestRebooted = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDiskBoots(t *testing.T) {
	dir := t.TempDir()

	write := func(name string, mbr []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, mbr, 0o644); err != nil {
			t.Fatal(err)
		}

		return p
	}

	blank := make([]byte, 512)
	protective := make([]byte, 512)
	protective[510], protective[511] = 0x55, 0xaa

	grub := append([]byte(nil), protective...)
	copy(grub[0x180:], "GRUB \x00Geom\x00Hard Disk\x00Read\x00 Error")

	if diskBoots(write("blank", blank)) || diskBoots(write("gpt", protective)) || diskBoots(filepath.Join(dir, "none")) {
		t.Fatal("a disk without GRUB boots")
	}

	if !diskBoots(write("grub", grub)) {
		t.Fatal("a disk with GRUB in its MBR does not boot")
	}
}

// A node boots its kernel or its ISO until its disk boots, then the disk
// alone: the ISO is ejected, as a user takes the CD out after the install.
func TestNextBoot(t *testing.T) {
	dir := t.TempDir()
	disk := filepath.Join(dir, "disk.img")

	if err := os.WriteFile(disk, make([]byte, 512), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, lc := range []launchConfig{
		{QEMU: qemu.Config{Kernel: "/k", Initrd: "/i", InPlaceReboot: true}, Disk: disk},
		{QEMU: qemu.Config{CDROM: "/talosbox.iso"}, Disk: disk},
	} {
		c, how := lc.nextBoot()
		if c.Kernel != lc.QEMU.Kernel || c.CDROM != lc.QEMU.CDROM || c.InPlaceReboot || !strings.Contains(how, "/") {
			t.Errorf("before the install: %+v, %q", c, how)
		}
	}

	grub := make([]byte, 512)
	grub[510], grub[511] = 0x55, 0xaa
	copy(grub[0x180:], "GRUB \x00Geom\x00Hard Disk\x00Read\x00 Error")

	if err := os.WriteFile(disk, grub, 0o644); err != nil {
		t.Fatal(err)
	}

	c, how := launchConfig{QEMU: qemu.Config{CDROM: "/talosbox.iso", Kernel: "/k"}, Disk: disk}.nextBoot()
	if c.CDROM != "" || c.Kernel != "" || how != "disk "+disk {
		t.Errorf("after the install: %+v, %q; want the disk alone", c, how)
	}
}
