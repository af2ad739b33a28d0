package initramfs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// maxMember bounds one member's size when reading: an initramfs file is
// loaded into memory, and a header can claim up to 4 GiB.
const maxMember = 1 << 30

// Read loads an initramfs, newc cpio compressed with gzip or zstd or not,
// into an Archive that can be changed and written again: the installer's
// customization (`talosbox imager customize`) rebuilds the one an
// installer image carries. Archives concatenated in one stream are read
// in order, a later member replacing an earlier one of the same name, as
// the kernel unpacks them. Owners and times are not kept (WriteTo writes
// root's and SetModTime's); hard links are not supported.
func Read(r io.Reader) (*Archive, error) {
	br := bufio.NewReaderSize(r, 1<<20)

	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("read initramfs: %w", err)
	}

	var src io.Reader = br

	switch {
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		dec, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("read initramfs: %w", err)
		}
		defer dec.Close()

		src = dec
	case magic[0] == 0x1f && magic[1] == 0x8b:
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read initramfs: %w", err)
		}
		defer gz.Close()

		src = gz
	case string(magic) != newcMagic[:4]:
		return nil, fmt.Errorf("read initramfs: not a newc cpio archive, gzip or zstd (starts % x)", magic)
	}

	a := &Archive{entries: map[string]*entry{}}
	cr := &cpioReader{r: bufio.NewReaderSize(src, 1<<20)}

	for first := true; ; first = false {
		rec, data, err := cr.next()
		if errors.Is(err, io.EOF) {
			if first {
				return nil, errors.New("read initramfs: empty archive")
			}

			return a, nil
		}

		if err != nil {
			return nil, fmt.Errorf("read initramfs: %w", err)
		}

		if first {
			a.mtime = rec.MTime
		}

		if err := a.add(rec, data); err != nil {
			return nil, fmt.Errorf("read initramfs: %w", err)
		}
	}
}

// add puts a member read from an archive.
func (a *Archive) add(rec Record, data []byte) error {
	name, err := clean(rec.Name)
	if err != nil {
		return err
	}

	perm := fileMode(rec.Mode)

	switch rec.Mode & 0o170000 {
	case modeDir:
		a.Dir(name, perm)
	case modeRegular:
		a.Bytes(name, data, perm)
	case modeSymlink:
		a.Symlink(name, string(data))
	case modeCharDev, modeBlkDev:
		a.put(name, &entry{rec: Record{Mode: rec.Mode, RdevMajor: rec.RdevMajor, RdevMinor: rec.RdevMinor}})
	default:
		return fmt.Errorf("%s: unsupported file type %#o", name, rec.Mode&0o170000)
	}

	return nil
}

// Remove takes p and everything under it out of the archive; it says
// whether anything was there.
func (a *Archive) Remove(p string) bool {
	name, err := clean(p)
	if err != nil {
		return false
	}

	found := false

	for n := range a.entries {
		if n == name || strings.HasPrefix(n, name+"/") {
			delete(a.entries, n)

			found = true
		}
	}

	return found
}

// ReadFile returns a regular member's contents.
func (a *Archive) ReadFile(p string) ([]byte, error) {
	name, err := clean(p)
	if err != nil {
		return nil, err
	}

	e, ok := a.entries[name]
	if !ok || e.rec.Mode&0o170000 != modeRegular {
		return nil, fmt.Errorf("initramfs: %s: no such file", p)
	}

	if e.src != "" {
		return os.ReadFile(e.src)
	}

	return e.data, nil
}

// WriteCompressed writes the archive to w compressed with c.
func (a *Archive) WriteCompressed(w io.Writer, c Compression) error {
	cw, err := c.writer(w)
	if err != nil {
		return err
	}

	if _, err := a.WriteTo(cw); err != nil {
		cw.Close()
		return err
	}

	return cw.Close()
}

// cpioReader reads newc members one after the other, across the
// trailers and zero padding of concatenated archives.
type cpioReader struct {
	r   *bufio.Reader
	off int64
}

func (c *cpioReader) read(p []byte) error {
	n, err := io.ReadFull(c.r, p)
	c.off += int64(n)

	return err
}

func (c *cpioReader) skipPad() error {
	if r := c.off % 4; r != 0 {
		return c.read(make([]byte, 4-r))
	}

	return nil
}

// next returns the next member that is not a trailer, or io.EOF.
func (c *cpioReader) next() (Record, []byte, error) {
	for {
		// Zeros between archives, in 4-byte steps.
		b, err := c.r.Peek(4)
		if errors.Is(err, io.EOF) && bytes.Count(b, []byte{0}) == len(b) {
			return Record{}, nil, io.EOF
		}

		if len(b) == 4 && bytes.Equal(b, []byte{0, 0, 0, 0}) {
			if err := c.read(make([]byte, 4)); err != nil {
				return Record{}, nil, err
			}

			continue
		}

		hdr := make([]byte, newcHdrSize)
		if err := c.read(hdr); err != nil {
			return Record{}, nil, fmt.Errorf("cpio header at %d: %w", c.off, err)
		}

		if string(hdr[:6]) != newcMagic {
			return Record{}, nil, fmt.Errorf("cpio header at %d: bad magic %q", c.off-newcHdrSize, hdr[:6])
		}

		var f [13]uint64

		for i := range f {
			v, err := strconv.ParseUint(string(hdr[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				return Record{}, nil, fmt.Errorf("cpio header at %d: field %d: %w", c.off-newcHdrSize, i, err)
			}

			f[i] = v
		}

		// ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
		// devminor, rdevmajor, rdevminor, namesize, check
		rec := Record{Mode: uint32(f[1]), UID: uint32(f[2]), GID: uint32(f[3]), MTime: uint32(f[5]), Size: int64(f[6]),
			RdevMajor: uint32(f[9]), RdevMinor: uint32(f[10])}

		if f[11] == 0 || f[11] > 4096 {
			return Record{}, nil, fmt.Errorf("cpio header at %d: name size %d", c.off-newcHdrSize, f[11])
		}

		name := make([]byte, f[11])
		if err := c.read(name); err != nil {
			return Record{}, nil, err
		}

		rec.Name = strings.TrimSuffix(string(name), "\x00")

		if err := c.skipPad(); err != nil {
			return Record{}, nil, err
		}

		if rec.Size > maxMember {
			return Record{}, nil, fmt.Errorf("cpio: %s: %d bytes is too large", rec.Name, rec.Size)
		}

		data := make([]byte, rec.Size)
		if err := c.read(data); err != nil {
			return Record{}, nil, fmt.Errorf("cpio: %s: %w", rec.Name, err)
		}

		if err := c.skipPad(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return Record{}, nil, err
		}

		if rec.Name == trailerName {
			continue
		}

		if rec.Name == "." || path.Clean(rec.Name) == "." {
			continue
		}

		return rec, data, nil
	}
}
