package disk

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// OpenExclusive opens a disk, partition or image file for writing. On a
// block device O_EXCL fails with EBUSY while anything on it is mounted,
// which keeps an install or a wipe off a disk in use.
func OpenExclusive(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_EXCL, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}

	return f, nil
}

// Size is the size of a block device or regular file.
func Size(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), err)
	}

	if st.Mode().IsRegular() {
		return st.Size(), nil
	}

	// A block device's size is its end.
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), err)
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), err)
	}

	return n, nil
}

// isBlockDevice says whether f is a block device (not an image file).
func isBlockDevice(f *os.File) bool {
	st, err := f.Stat()

	return err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0
}

// rereadPartitions asks the kernel to read f's partition table again, so
// that the new partitions get their devices (and sysfs entries with
// PARTNAME). It fails with EBUSY while a partition of the disk is in use.
func rereadPartitions(f *os.File) error {
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0); err != nil {
		return fmt.Errorf("re-read the partition table of %s: %w", f.Name(), err)
	}

	return nil
}

// MountOptions are the ext4 mount options of the volumes: the inode
// tables were zeroed when the filesystem was made, so the kernel's
// background initialisation (which would write them all again) is off.
const MountOptions = "noinit_itable"

// Mount mounts the ext4 filesystem on dev at target (created if missing).
func Mount(dev, target string, flags uintptr) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("mount %s at %s: %w", dev, target, err)
	}

	if err := unix.Mount(dev, target, FSExt4, flags, MountOptions); err != nil {
		return fmt.Errorf("mount %s at %s (%s): %w", dev, target, FSExt4, err)
	}

	return nil
}

// Unmount unmounts target. It never detaches lazily: a wipe after a lazy
// unmount would be undone when the filesystem is finally written back.
// A busy mount is retried for a moment (a service's last file may still
// be closing).
func Unmount(target string) error {
	deadline := time.Now().Add(5 * time.Second)

	for {
		err := unix.Unmount(target, 0)
		if err == nil || errors.Is(err, unix.EINVAL) { // EINVAL: not mounted
			return nil
		}

		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("unmount %s: %w", target, err)
		}

		time.Sleep(50 * time.Millisecond)
	}
}
