package disk

import (
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrTrimUnsupported is a trim the filesystem, or the device under it,
// cannot do: a filesystem without FITRIM, a disk without discard, a
// dm-crypt mapping opened without allow_discards.
var ErrTrimUnsupported = errors.New("trim is not supported")

// fitrim is FITRIM, _IOWR('X', 121, struct fstrim_range) (linux/fs.h),
// which x/sys/unix does not name.
const fitrim = 0xc0185879

// fstrimRange is the kernel's struct fstrim_range: the byte range to
// trim and the smallest free extent worth discarding; on return, len is
// how many bytes were trimmed.
type fstrimRange struct {
	start, len, minLen uint64
}

// Trim discards the free blocks of the filesystem mounted at dir, as
// fstrim(8) does (the FITRIM ioctl, over the whole filesystem), so that
// the disk under it (an SSD, a thin or sparse virtual disk) learns they
// are free. It returns how many bytes the filesystem reports trimmed.
func Trim(dir string) (uint64, error) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, fmt.Errorf("trim %s: %w", dir, err)
	}
	defer f.Close()

	r := fstrimRange{len: math.MaxUint64}

	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fitrim, uintptr(unsafe.Pointer(&r))); errno != 0 {
		if errno == unix.EOPNOTSUPP || errno == unix.ENOTTY {
			return 0, fmt.Errorf("trim %s: %w (%w)", dir, ErrTrimUnsupported, errno)
		}

		return 0, fmt.Errorf("trim %s: %w", dir, errno)
	}

	return r.len, nil
}
