package storage

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bootloader"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/installer"
)

// The EFI partition gets GRUB for UEFI as EFI/BOOT/BOOTX64.EFI on a FAT
// that fsck.fat accepts; the same GRUB again leaves the partition
// untouched, another one replaces it, and an installer from before UEFI
// leaves it as it is.
func TestWriteEFIBoot(t *testing.T) {
	sys := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sys, "class", "block", "vda1"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(sys, "class", "block", "vda1", "start"), []byte("2048\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The partition is a plain file here; on a node it is /dev/vda1.
	espPath := filepath.Join(t.TempDir(), "vda1")
	if err := os.WriteFile(espPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.Truncate(espPath, 100*disk.MiB); err != nil {
		t.Fatal(err)
	}

	devs := []disk.BlockDevice{
		{Name: "vda", Path: "/dev/vda", Size: 4 << 30},
		{Name: "vda1", Path: espPath, Disk: "vda", PartN: 1, PartName: disk.LabelEFI, Size: 100 * disk.MiB},
	}

	var log strings.Builder

	write := func(grub []byte) {
		t.Helper()

		if err := writeEFIBoot(sys, devs, "vda", &installer.Assets{EFIImg: grub}, &log); err != nil {
			t.Fatal(err)
		}
	}

	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	mtime := func() time.Time {
		st, err := os.Stat(espPath)
		if err != nil {
			t.Fatal(err)
		}

		return st.ModTime()
	}

	grub := bytes.Repeat([]byte("MZ grub for uefi "), 60000)
	write(grub)

	if out, err := exec.Command("fsck.fat", "-n", espPath).CombinedOutput(); err != nil {
		t.Fatalf("fsck.fat -n: %v\n%s", err, out)
	}

	cmd := exec.Command("mtype", "-i", espPath, "::"+bootloader.EFIBootPath)
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")

	if got, err := cmd.Output(); err != nil || !bytes.Equal(got, grub) {
		t.Fatalf("mtype %s: %v, %d bytes, want %d", bootloader.EFIBootPath, err, len(got), len(grub))
	}

	if err := os.Chtimes(espPath, old, old); err != nil {
		t.Fatal(err)
	}

	write(grub)

	if !mtime().Equal(old) {
		t.Error("the same GRUB was written again")
	}

	write(append(grub, "v2"...))

	if mtime().Equal(old) {
		t.Error("another GRUB was not written")
	}

	if err := os.Chtimes(espPath, old, old); err != nil {
		t.Fatal(err)
	}

	write(nil)

	if !mtime().Equal(old) || !strings.Contains(log.String(), "has no GRUB for UEFI") {
		t.Errorf("an installer without BOOTX64.EFI: the partition was written, or nothing said so: %q", log.String())
	}

	f, err := os.Open(espPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if v, err := disk.ProbeVolume(disk.Region{File: f, Size: 100 * disk.MiB}); err != nil || v.Name != disk.ProbeVFAT || v.Label != bootloader.ESPLabel {
		t.Errorf("disk.ProbeVolume of the EFI partition: %+v, %v; want vfat labelled EFI", v, err)
	}
}
