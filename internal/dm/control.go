package dm

// The control node and the ioctl calls through it.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// system is where this package finds device-mapper. Tests point it at a
// fake kernel and a temporary /dev.
type system struct {
	// control is the device-mapper control node.
	control string
	// misc holds the control node's "major:minor" while dm_mod is loaded,
	// to make the node when /dev is not a devtmpfs.
	misc string
	// dev is where mapper/<name> nodes are made.
	dev string
	// open opens the control node.
	open func(path string) (controller, error)
}

var sys = system{
	control: "/dev/mapper/control",
	misc:    "/sys/class/misc/device-mapper/dev",
	dev:     "/dev",
	open:    openFile,
}

// controller is an open control node.
type controller interface {
	// ioctl runs one command (unix.DM_*) on buf, which the kernel
	// reads and writes in place.
	ioctl(cmd uint, buf []byte) error
	Close() error
}

// controlFile is the real control node.
type controlFile struct{ fd int }

func openFile(path string) (controller, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}

	return &controlFile{fd: fd}, nil
}

func (c *controlFile) ioctl(cmd uint, buf []byte) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(c.fd), uintptr(cmd), uintptr(unsafe.Pointer(&buf[0])))
		if e != unix.EINTR {
			if e != 0 {
				return e
			}

			return nil
		}
	}
}

func (c *controlFile) Close() error { return unix.Close(c.fd) }

// openControl opens the control node. Without udev or a devtmpfs /dev
// nobody makes it, so it is made here from sysfs when dm_mod is loaded.
func (s system) openControl() (controller, error) {
	c, err := s.open(s.control)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return nil, fmt.Errorf("dm: %w", err)
		}

		return c, nil
	}

	if mkErr := s.makeControl(); mkErr != nil {
		return nil, fmt.Errorf("dm: %s does not exist (is dm_mod loaded?): %w: %w", s.control, ErrNoDeviceMapper, errors.Join(err, mkErr))
	}

	if c, err = s.open(s.control); err != nil {
		return nil, fmt.Errorf("dm: %w", err)
	}

	return c, nil
}

// makeControl makes the control node from the number dm_mod registered.
func (s system) makeControl() error {
	b, err := os.ReadFile(s.misc)
	if err != nil {
		return err
	}

	major, minor, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	maj, err1 := strconv.ParseUint(major, 10, 32)
	minr, err2 := strconv.ParseUint(minor, 10, 32)

	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("%s: %q is not major:minor", s.misc, b)
	}

	if err := os.MkdirAll(filepath.Dir(s.control), 0o755); err != nil {
		return err
	}

	dev := unix.Mkdev(uint32(maj), uint32(minr))
	if err := unix.Mknod(s.control, unix.S_IFCHR|0o600, int(dev)); err != nil && !errors.Is(err, unix.EEXIST) {
		return &fs.PathError{Op: "mknod", Path: s.control, Err: err}
	}

	return nil
}

// maxReply bounds the buffer grown for replies that do not fit: a table
// or device list this large is not something a node makes.
const maxReply = 16 << 20

// query runs a command whose reply carries data (a table, a device
// list): it starts with a buffer of size bytes and doubles it while the
// kernel says the reply did not fit. With wipe set, every buffer that
// may hold key material is zeroed before it is dropped, and the caller
// must wipe the one returned.
func query(c controller, cmd uint, name string, flags uint32, size int, wipe bool) ([]byte, header, error) {
	for {
		buf := newBuffer(size, name, "", flags)
		if err := c.ioctl(cmd, buf); err != nil {
			if wipe {
				clear(buf)
			}

			return nil, header{}, err
		}

		h, err := parseHeader(buf)
		if err != nil || h.Flags&unix.DM_BUFFER_FULL_FLAG == 0 {
			return buf, h, err
		}

		if wipe {
			clear(buf)
		}

		if size *= 2; size > maxReply {
			return nil, header{}, fmt.Errorf("dm: reply does not fit in %d bytes", maxReply)
		}
	}
}
