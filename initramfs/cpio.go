// Package initramfs builds the initial RAM filesystems talosbox boots
// from: newc cpio archives (what the kernel unpacks into its rootfs), with
// the directories parents first, a dev/console node, the binary as /init
// and the kernel modules a boot needs together with their dependencies.
//
// Build and BuildFile make the node's initramfs (the `talosbox initramfs`
// applet, `make initramfs`), reproducibly and optionally gzip or zstd
// compressed; Archive and Modules are the pieces, which the QEMU guest
// tests (boot/qemu, boot/guesttest) also use directly.
package initramfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// newc field layout: a 6-byte magic and 13 fields of 8 hex digits, then
// the NUL-terminated name padded to 4 bytes, then the data padded to 4.
const (
	newcMagic   = "070701"
	newcHdrSize = 110
	trailerName = "TRAILER!!!"
)

// File types in a cpio mode (the st_mode bits, as in <sys/stat.h>).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
	modeBlkDev  = 0o060000
	modePerm    = 0o7777
)

// Record is one cpio entry.
type Record struct {
	// Name is relative to the archive root, without a leading slash.
	Name string
	// Mode holds the file type bits and the permission bits.
	Mode uint32
	UID  uint32
	GID  uint32
	// MTime is in seconds since the epoch; 0 keeps archives reproducible.
	MTime uint32
	// RdevMajor and RdevMinor are a device node's numbers.
	RdevMajor, RdevMinor uint32
	// Size is the data's length; for a symlink, its target's.
	Size int64
	// Data supplies Size bytes (nil for directories and nodes); for a
	// symlink, the target.
	Data io.Reader
}

// Writer writes a newc archive.
type Writer struct {
	w      *bufio.Writer
	off    int64
	ino    uint32
	closed bool
}

// NewWriter writes an archive to w; Close writes the trailer.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<20)}
}

func (cw *Writer) write(p []byte) error {
	n, err := cw.w.Write(p)
	cw.off += int64(n)

	return err
}

func (cw *Writer) pad() error {
	if r := cw.off % 4; r != 0 {
		return cw.write(make([]byte, 4-r))
	}

	return nil
}

func (cw *Writer) header(r *Record, nlink uint32) error {
	if len(r.Name) == 0 || r.Name[0] == '/' {
		return fmt.Errorf("cpio: entry name %q must be relative and non-empty", r.Name)
	}

	if r.Size < 0 || r.Size > 0xffffffff {
		return fmt.Errorf("cpio: %s: size %d does not fit a newc header", r.Name, r.Size)
	}

	cw.ino++
	hdr := fmt.Sprintf("%s%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		newcMagic, cw.ino, r.Mode, r.UID, r.GID, nlink, r.MTime, uint32(r.Size),
		0, 0, r.RdevMajor, r.RdevMinor, len(r.Name)+1, 0)

	if err := cw.write([]byte(hdr)); err != nil {
		return err
	}

	if err := cw.write(append([]byte(r.Name), 0)); err != nil {
		return err
	}

	return cw.pad()
}

// WriteRecord writes one entry and its data.
func (cw *Writer) WriteRecord(r Record) error {
	if cw.closed {
		return errors.New("cpio: write after close")
	}

	nlink := uint32(1)
	if r.Mode&0o170000 == modeDir {
		nlink = 2
	}

	if err := cw.header(&r, nlink); err != nil {
		return err
	}

	if r.Size > 0 {
		if r.Data == nil {
			return fmt.Errorf("cpio: %s: %d bytes announced and no data", r.Name, r.Size)
		}

		n, err := io.CopyN(cw.w, r.Data, r.Size)
		cw.off += n

		if err != nil {
			return fmt.Errorf("cpio: %s: %w", r.Name, err)
		}

		if err := cw.pad(); err != nil {
			return err
		}
	}

	return nil
}

// Close writes the trailer and flushes; it does not close the underlying
// writer.
func (cw *Writer) Close() error {
	if cw.closed {
		return nil
	}

	cw.closed = true
	cw.ino = 0 // the trailer carries inode 0, as GNU cpio writes it

	if err := cw.header(&Record{Name: trailerName}, 1); err != nil {
		return err
	}

	return cw.w.Flush()
}

// fileMode turns a cpio mode into an fs.FileMode (for readers and tests).
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)

	switch m & 0o170000 {
	case modeDir:
		mode |= fs.ModeDir
	case modeSymlink:
		mode |= fs.ModeSymlink
	case modeCharDev:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case modeBlkDev:
		mode |= fs.ModeDevice
	}

	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}

	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}

	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}

	return mode
}
