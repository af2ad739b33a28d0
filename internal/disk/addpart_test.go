package disk_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/disk"
)

// TestAddPartition: partitions added one by one to a blank image, then
// into the largest gap of a GPT; sfdisk (which checks both headers and
// their CRCs) reads every table as written.
func TestAddPartition(t *testing.T) {
	t.Parallel()

	img := image(t, 300*disk.MiB)

	room, err := disk.FreeSpace(img)
	if err != nil {
		t.Fatal(err)
	}

	// From the first MiB to the last whole MiB before the backup table.
	if room.HasTable || room.Start != 2048 || room.Bytes() != 298*disk.MiB {
		t.Fatalf("blank image: %+v (%d bytes)", room, room.Bytes())
	}

	// Old contents where the partition goes must not show through.
	writeAt(t, img, 2048*512, []byte("stale data"))

	a, err := disk.AddPartition(img, "u-a", disk.TypeLinuxData, 100*disk.MiB+12345)
	if err != nil {
		t.Fatal(err)
	}

	if a.Index != 1 || a.Start != 2048 || a.Bytes() != 100*disk.MiB {
		t.Errorf("first partition %+v", a)
	}

	b, err := disk.AddPartition(img, "u-b", disk.TypeLinuxData, 50*disk.MiB)
	if err != nil {
		t.Fatal(err)
	}

	if b.Index != 2 || b.Start != a.End+1 {
		t.Errorf("second partition %+v after %+v", b, a)
	}

	d := dumpTable(t, img)
	if len(d.PartitionTable.Partitions) != 2 || d.PartitionTable.Partitions[0].Name != "u-a" || d.PartitionTable.Partitions[1].Name != "u-b" ||
		d.PartitionTable.Partitions[1].Start != b.Start || d.PartitionTable.Partitions[1].Size != 50*disk.MiB/512 {
		t.Errorf("sfdisk reads %+v", d.PartitionTable)
	}

	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if got, err := disk.Probe(disk.Region{File: f, Offset: a.Offset(), Size: a.Bytes()}); err != nil || got != "" {
		t.Errorf("the new partition shows %q, %v", got, err)
	}

	// Too big for what is left: refused, the table untouched.
	if _, err := disk.AddPartition(img, "u-c", disk.TypeLinuxData, 200*disk.MiB); err == nil ||
		!strings.Contains(err.Error(), "do not fit") {
		t.Errorf("an oversized partition: %v", err)
	}

	if d := dumpTable(t, img); len(d.PartitionTable.Partitions) != 2 {
		t.Errorf("a refused partition changed the table: %+v", d.PartitionTable)
	}
}

// TestFreeSpaceLargestGap: on a GPT with a gap between partitions smaller
// than the space after them, the room is after them; a whole-disk
// filesystem is no place for a partition.
func TestFreeSpaceLargestGap(t *testing.T) {
	t.Parallel()

	img := image(t, 300*disk.MiB)
	sfdisk := tool(t, "sfdisk", "fdisk")

	cmd := exec.Command(sfdisk, img)
	cmd.Stdin = strings.NewReader("label: gpt\nstart=2048, size=20MiB\nstart=100MiB, size=150MiB\n")

	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sfdisk: %v\n%s", err, out)
	}

	room, err := disk.FreeSpace(img)
	if err != nil {
		t.Fatal(err)
	}

	// The gap (21 MiB to 100 MiB) is 79 MiB; after 250 MiB, 49 MiB.
	if !room.HasTable || room.Start != 21*2048 || room.Bytes() != 79*disk.MiB {
		t.Errorf("room %+v (%d bytes)", room, room.Bytes())
	}

	e, err := disk.AddPartition(img, "u-gap", disk.TypeLinuxData, room.Bytes())
	if err != nil || e.Index != 3 {
		t.Fatalf("%+v %v", e, err)
	}

	if d := dumpTable(t, img); len(d.PartitionTable.Partitions) != 3 || d.PartitionTable.Partitions[2].Name != "u-gap" {
		t.Errorf("sfdisk reads %+v", d.PartitionTable)
	}

	if _, err := disk.FreeSpace(ext4Image(t)); !errors.Is(err, disk.ErrNotPartitionable) {
		t.Errorf("a whole-disk filesystem: %v", err)
	}
}

// TestAddPartitionLoop adds partitions to a real loop device, the second
// while the first is mounted: the kernel learns of each alone (BLKPG; this
// machine's kernel need not even read GPTs) and makes its device, which
// takes a filesystem.
func TestAddPartitionLoop(t *testing.T) {
	t.Parallel()

	img := image(t, 300*disk.MiB)

	out, err := exec.Command(tool(t, "losetup", "mount"), "--find", "--show", "--partscan", img).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}

	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() }) //nolint:errcheck

	if _, err := disk.AddPartition(loop, "u-a", disk.TypeLinuxData, 100*disk.MiB); err != nil {
		t.Fatal(err)
	}

	part1 := waitDevice(t, loop+"p1")
	if _, err := disk.EnsureFilesystem(partDevice(t, part1, "u-a"), disk.FSExt4); err != nil {
		t.Fatal(err)
	}

	mnt := t.TempDir()
	if out, err := exec.Command("mount", part1, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}

	t.Cleanup(func() { exec.Command("umount", mnt).Run() }) //nolint:errcheck

	e, err := disk.AddPartition(loop, "u-b", disk.TypeLinuxData, 64*disk.MiB)
	if err != nil {
		t.Fatal(err)
	}

	part2 := waitDevice(t, loop+"p2")

	if got, err := os.ReadFile(filepath.Join("/sys/class/block", filepath.Base(part2), "size")); err != nil || strings.TrimSpace(string(got)) != "131072" {
		t.Errorf("the kernel's %s: size %q, %v (want 64 MiB)", part2, got, err)
	}

	if e.Index != 2 {
		t.Errorf("index %d", e.Index)
	}

	if formatted, err := disk.EnsureFilesystem(partDevice(t, part2, "u-b"), disk.FSExt4); err != nil || !formatted {
		t.Fatalf("format %s: %v, %v", part2, formatted, err)
	}

	if got := blkidType(t, part2); got != "ext4" {
		t.Errorf("%s holds %q", part2, got)
	}
}

// waitDevice waits for the kernel (and this machine's devtmpfs or udev)
// to make a partition's device node.
func waitDevice(t *testing.T, path string) string {
	t.Helper()

	deadline := time.Now().Add(10 * time.Second)

	for {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeDevice != 0 {
			return path
		}

		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}

		time.Sleep(20 * time.Millisecond)
	}
}

// partDevice describes a partition of this machine for EnsureFilesystem.
func partDevice(t *testing.T, path, label string) disk.BlockDevice {
	t.Helper()

	b, err := os.ReadFile(filepath.Join("/sys/class/block", filepath.Base(path), "size"))
	if err != nil {
		t.Fatal(err)
	}

	var sectors int64
	if _, err := fmt.Sscan(string(b), &sectors); err != nil {
		t.Fatal(err)
	}

	return disk.BlockDevice{Name: filepath.Base(path), Path: path, PartName: label, Size: sectors * 512}
}
