package disk_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
)

// blkidType is what blkid -p finds at the start of a device or image:
// the judge of whether a wipe removed a signature.
func blkidType(t *testing.T, path string) string {
	t.Helper()

	out, _ := exec.Command(tool(t, "blkid", "util-linux"), "-p", "-o", "value", "-s", "TYPE", path).Output()

	return strings.TrimSpace(string(out))
}

func ext4Image(t *testing.T) string {
	t.Helper()

	img := image(t, 64*disk.MiB)
	if out, err := exec.Command(tool(t, "mkfs.ext4", "e2fsprogs"), "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}

	if got := blkidType(t, img); got != "ext4" {
		t.Fatalf("blkid before the wipe: %q, want ext4", got)
	}

	return img
}

func TestWipeBlockDevice(t *testing.T) {
	for _, zeroes := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast", true: "zeroes"}[zeroes], func(t *testing.T) {
			img := ext4Image(t)

			dev := disk.BlockDevice{Name: "disk.img", Path: img}
			if err := disk.WipeBlockDevice(dev, disk.WipeOptions{Zeroes: zeroes, SysRoot: t.TempDir()}); err != nil {
				t.Fatal(err)
			}

			if got := blkidType(t, img); got != "" {
				t.Errorf("blkid after the wipe: %q, want nothing", got)
			}

			b, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}

			// A fast wipe leaves the middle (the inode tables mkfs wrote);
			// zeroes leave nothing.
			allZero := !bytes.ContainsFunc(b, func(r rune) bool { return r != 0 })
			if allZero != zeroes {
				t.Errorf("every byte zero: %v, want %v", allZero, zeroes)
			}
		})
	}
}

// TestWipeRefusesHeld: a device with a holder in sysfs (a dm target built
// on it) is refused unless the secondary check is skipped.
func TestWipeRefusesHeld(t *testing.T) {
	img := ext4Image(t)
	sys := t.TempDir()

	if err := os.MkdirAll(filepath.Join(sys, "class", "block", "vdb", "holders", "dm-0"), 0o755); err != nil {
		t.Fatal(err)
	}

	dev := disk.BlockDevice{Name: "vdb", Path: img}

	err := disk.WipeBlockDevice(dev, disk.WipeOptions{SysRoot: sys})
	if !errors.Is(err, disk.ErrInUse) || !strings.Contains(err.Error(), "dm-0") {
		t.Fatalf("wipe of a held device: %v, want ErrInUse naming dm-0", err)
	}

	if got := blkidType(t, img); got != "ext4" {
		t.Fatalf("a refused wipe changed the device: blkid %q", got)
	}

	if err := disk.WipeBlockDevice(dev, disk.WipeOptions{SysRoot: sys, SkipSecondaryCheck: true}); err != nil {
		t.Fatal(err)
	}
}

// TestWipeRefusesMounted mounts a filesystem on a real loop device: the
// kernel refuses the exclusive open, so the wipe is refused and the
// filesystem survives; unmounted, the same device is wiped.
func TestWipeRefusesMounted(t *testing.T) {
	img := ext4Image(t)

	out, err := exec.Command(tool(t, "losetup", "mount"), "--find", "--show", img).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}

	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() }) //nolint:errcheck

	mnt := t.TempDir()
	if out, err := exec.Command("mount", loop, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}

	mounted := true
	t.Cleanup(func() {
		if mounted {
			exec.Command("umount", mnt).Run() //nolint:errcheck
		}
	})

	dev := disk.BlockDevice{Name: filepath.Base(loop), Path: loop}

	if err := disk.WipeBlockDevice(dev, disk.WipeOptions{}); !errors.Is(err, disk.ErrInUse) {
		t.Fatalf("wipe of a mounted device: %v, want ErrInUse", err)
	}

	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}

	mounted = false

	if got := blkidType(t, loop); got != "ext4" {
		t.Fatalf("the refused wipe changed the device: blkid %q", got)
	}

	if err := disk.WipeBlockDevice(dev, disk.WipeOptions{}); err != nil {
		t.Fatal(err)
	}

	if got := blkidType(t, loop); got != "" {
		t.Errorf("blkid after the wipe: %q, want nothing", got)
	}
}

// TestDropPartition removes the middle one of three partitions; sfdisk,
// which checks both GPT headers, sees the other two where they were.
func TestDropPartition(t *testing.T) {
	img := image(t, 64*disk.MiB)

	cmd := exec.Command(tool(t, "sfdisk", "fdisk"), "-q", img)
	cmd.Stdin = strings.NewReader("label: gpt\nsize=8M, name=a\nsize=8M, name=b\nsize=8M, name=c\n")

	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sfdisk: %v: %s", err, out)
	}

	before := dumpTable(t, img).PartitionTable.Partitions

	dev := disk.BlockDevice{Name: "disk.img2", Path: filepath.Join(filepath.Dir(img), "disk.img2"), Disk: "disk.img", PartN: 2}
	if err := disk.DropPartition(dev); err != nil {
		t.Fatal(err)
	}

	after := dumpTable(t, img).PartitionTable.Partitions
	if len(after) != 2 || after[0] != before[0] || after[1] != before[2] {
		t.Fatalf("partitions after dropping the second:\n%+v\nwant\n%+v", after, []any{before[0], before[2]})
	}

	if err := disk.DropPartition(dev); err == nil || !strings.Contains(err.Error(), "no partition 2") {
		t.Fatalf("dropping it again: %v, want an error", err)
	}
}
