package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"golang.org/x/sys/unix"
)

// ErrInUse is matched by WipeBlockDevice's refusals of a device the
// kernel says something holds.
var ErrInUse = errors.New("in use")

// WipeOptions say how WipeBlockDevice wipes.
type WipeOptions struct {
	// Zeroes overwrites every byte; otherwise only the signatures at the
	// ends go (Wipe), which is what makes a disk look new to an install.
	Zeroes bool
	// DropPartition removes a partition from its disk's table after the
	// wipe.
	DropPartition bool
	// SkipSecondaryCheck wipes a device even when another one is built on
	// it (a device-mapper target, an md array).
	SkipSecondaryCheck bool
	// SysRoot is sysfs (/sys when empty).
	SysRoot string
}

// WipeBlockDevice wipes a disk or partition that nothing uses: the
// kernel refuses the exclusive open while anything on it is mounted or
// held, and sysfs holders name what is built on it. A wiped disk's
// partitions are forgotten by the kernel too (its table is gone).
func WipeBlockDevice(dev BlockDevice, opts WipeOptions) error {
	sysRoot := opts.SysRoot
	if sysRoot == "" {
		sysRoot = "/sys"
	}

	if !opts.SkipSecondaryCheck {
		if holders := Holders(sysRoot, dev.Name); len(holders) > 0 {
			return fmt.Errorf("wipe %s: %w: %s is built on it", dev.Name, ErrInUse, holders[0])
		}
	}

	f, err := os.OpenFile(dev.Path, os.O_RDWR|os.O_EXCL, 0)
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("wipe %s: %w: mounted, or opened by the kernel", dev.Name, ErrInUse)
	}

	if err != nil {
		return fmt.Errorf("wipe %s: %w", dev.Name, err)
	}
	defer f.Close() //nolint:errcheck

	size, err := Size(f)
	if err != nil {
		return fmt.Errorf("wipe %s: %w", dev.Name, err)
	}

	if opts.Zeroes {
		err = zeroOut(f, size)
	} else {
		err = Wipe(Region{File: f, Size: size})
	}

	if err != nil {
		return err
	}

	if !dev.IsPartition() {
		if isBlockDevice(f) {
			// The table went with the first MiB; a disk still in use by
			// its partitions was refused above, so this cannot be EBUSY.
			// EINVAL is a device without partitions (a loop device made
			// without partition scanning).
			if err := rereadPartitions(f); err != nil && !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("wipe %s: %w", dev.Name, err)
			}
		}

		return nil
	}

	if opts.DropPartition {
		if err := f.Close(); err != nil {
			return fmt.Errorf("wipe %s: %w", dev.Name, err)
		}

		return dropPartition(dev)
	}

	return nil
}

// Holders are the devices built on name (sysfs holders: dm-0, md127).
func Holders(sysRoot, name string) []string {
	entries, err := os.ReadDir(filepath.Join(sysRoot, "class", "block", name, "holders"))
	if err != nil {
		return nil
	}

	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}

	return out
}

// zeroOut writes zeroes over the whole device: BLKZEROOUT lets the disk
// do it (write-zeroes, or unmap where that reads back as zeroes); plain
// writes otherwise, and for image files.
func zeroOut(f *os.File, size int64) error {
	if isBlockDevice(f) {
		rng := [2]uint64{0, uint64(size)}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKZEROOUT, uintptr(unsafe.Pointer(&rng))); errno == 0 {
			return f.Sync()
		}
	}

	zero := make([]byte, MiB)

	for off := int64(0); off < size; off += int64(len(zero)) {
		n := min(int64(len(zero)), size-off)
		if _, err := f.WriteAt(zero[:n], off); err != nil {
			return fmt.Errorf("zero %s: %w", f.Name(), err)
		}
	}

	return f.Sync()
}

// dropPartition removes a partition from its disk's GPT and from the
// kernel's view of the disk (BLKPG), leaving the other partitions, which
// may be in use, alone.
func dropPartition(dev BlockDevice) error {
	diskPath := filepath.Join(filepath.Dir(dev.Path), dev.Disk)

	f, err := os.OpenFile(diskPath, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("drop partition %s: %w", dev.Name, err)
	}
	defer f.Close() //nolint:errcheck

	size, err := Size(f)
	if err != nil {
		return fmt.Errorf("drop partition %s: %w", dev.Name, err)
	}

	table, err := gpt.Read(file.New(f, false), SectorSize, SectorSize)
	if err != nil {
		return fmt.Errorf("drop partition %s: %s has no GPT: %w", dev.Name, dev.Disk, err)
	}

	// go-diskfs places each entry at its Index: dropping the entry from
	// the list leaves its slot in the array zero, as unused.
	kept := slices.DeleteFunc(slices.Clone(table.Partitions), func(p *gpt.Partition) bool {
		return p.Index == dev.PartN && p.Type != gpt.Unused
	})

	if len(kept) == len(table.Partitions) {
		return fmt.Errorf("drop partition %s: no partition %d in the table of %s", dev.Name, dev.PartN, dev.Disk)
	}

	table.Partitions = kept

	w, err := file.New(f, false).Writable()
	if err != nil {
		return fmt.Errorf("drop partition %s: %w", dev.Name, err)
	}

	if err := table.Write(w, size); err != nil {
		return fmt.Errorf("drop partition %s: %w", dev.Name, err)
	}

	if err := f.Sync(); err != nil {
		return fmt.Errorf("drop partition %s: %w", dev.Name, err)
	}

	if !isBlockDevice(f) {
		return nil
	}

	arg := unix.BlkpgPartition{Pno: int32(dev.PartN)}
	ioc := unix.BlkpgIoctlArg{Op: unix.BLKPG_DEL_PARTITION, Datalen: int32(unsafe.Sizeof(arg)), Data: (*byte)(unsafe.Pointer(&arg))}

	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKPG, uintptr(unsafe.Pointer(&ioc))); errno != 0 {
		return fmt.Errorf("drop partition %s: the table is written, but the kernel still has it: %w", dev.Name, errno)
	}

	return nil
}
