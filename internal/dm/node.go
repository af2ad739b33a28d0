package dm

// Block device nodes. devtmpfs makes /dev/dm-N for a mapping, but the
// /dev/mapper/<name> name is udev's work, and a node has no udev.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ensureNode makes dev/mapper/<name> a block device node for
// major:minor. A node (or udev's symlink) that is already right is kept;
// a stale one, left by an earlier mapping of the same name with another
// number, is replaced. Anything else at the path is an error.
func ensureNode(dev, name string, major, minor uint32) (string, error) {
	dir := filepath.Join(dev, unix.DM_DIR)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}

	p := filepath.Join(dir, name)
	want := unix.Mkdev(major, minor)

	var st unix.Stat_t

	err := unix.Lstat(p, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return "", &fs.PathError{Op: "lstat", Path: p, Err: err}
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		var target unix.Stat_t
		if unix.Stat(p, &target) == nil && target.Mode&unix.S_IFMT == unix.S_IFBLK && target.Rdev == want {
			return p, nil
		}

		if err := os.Remove(p); err != nil {
			return "", err
		}
	case st.Mode&unix.S_IFMT == unix.S_IFBLK:
		if st.Rdev == want {
			return p, nil
		}

		if err := os.Remove(p); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("%s exists and is not a block device (mode %#o)", p, st.Mode)
	}

	if err := unix.Mknod(p, unix.S_IFBLK|0o600, int(want)); err != nil {
		return "", &fs.PathError{Op: "mknod", Path: p, Err: err}
	}

	return p, nil
}

// removeNode removes dev/mapper/<name> if it is the block device node of
// major:minor; a node of another number, or udev's symlink, is not ours.
func removeNode(dev, name string, major, minor uint32) error {
	p := filepath.Join(dev, unix.DM_DIR, name)

	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}

		return &fs.PathError{Op: "lstat", Path: p, Err: err}
	}

	if st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != unix.Mkdev(major, minor) {
		return nil
	}

	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	return nil
}
