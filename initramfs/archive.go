package initramfs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// entry is one planned archive member.
type entry struct {
	rec Record
	// src is a host file copied at write time (regular files only);
	// data holds the contents otherwise.
	src  string
	data []byte
}

// Archive is an initramfs being assembled: add files, links, nodes and
// modules in any order, then WriteTo writes every directory before what
// it holds. Missing parent directories are created with mode 0755.
type Archive struct {
	entries map[string]*entry
	mtime   uint32
}

// New returns an archive holding dev/console (5, 1), which the kernel
// opens as the init's stdin, stdout and stderr, and the mount points an
// init needs before it can mount anything: dev, proc, sys, run and tmp.
func New() *Archive {
	a := &Archive{entries: map[string]*entry{}}
	for _, d := range []string{"dev", "proc", "sys", "run", "tmp"} {
		a.Dir(d, 0o755)
	}

	a.CharDev("dev/console", 0o600, 5, 1)

	return a
}

// SetModTime stamps every member with sec (seconds since the epoch)
// when the archive is written. The default, 0, and a fixed
// SOURCE_DATE_EPOCH both keep the archive reproducible: no member ever
// carries its source file's own time.
func (a *Archive) SetModTime(sec uint32) { a.mtime = sec }

// permBits turns permissions into cpio mode bits, keeping setuid, setgid
// and sticky (a /tmp wants 01777), which FileMode keeps outside Perm.
func permBits(perm os.FileMode) uint32 {
	b := uint32(perm.Perm())

	if perm&os.ModeSetuid != 0 {
		b |= 0o4000
	}

	if perm&os.ModeSetgid != 0 {
		b |= 0o2000
	}

	if perm&os.ModeSticky != 0 {
		b |= 0o1000
	}

	return b
}

// clean makes p relative to the archive root and rejects escapes.
func clean(p string) (string, error) {
	c := path.Clean("/" + p)
	if c == "/" || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("initramfs: invalid path %q", p)
	}

	return c[1:], nil
}

func (a *Archive) put(p string, e *entry) {
	name, err := clean(p)
	if err != nil {
		panic(err) // programming error: paths are the caller's literals
	}

	e.rec.Name = name
	a.entries[name] = e

	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if _, ok := a.entries[dir]; ok {
			break
		}

		a.entries[dir] = &entry{rec: Record{Name: dir, Mode: modeDir | 0o755}}
	}
}

// Dir adds a directory (and its parents).
func (a *Archive) Dir(p string, perm os.FileMode) {
	a.put(p, &entry{rec: Record{Mode: modeDir | permBits(perm)}})
}

// Bytes adds a regular file with the given contents.
func (a *Archive) Bytes(p string, data []byte, perm os.FileMode) {
	a.put(p, &entry{rec: Record{Mode: modeRegular | permBits(perm), Size: int64(len(data))}, data: data})
}

// File adds a copy of the host file src, read when the archive is
// written; perm 0 keeps the source's permissions.
func (a *Archive) File(p, src string, perm os.FileMode) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}

	if !st.Mode().IsRegular() {
		return fmt.Errorf("initramfs: %s is not a regular file", src)
	}

	if perm == 0 {
		perm = st.Mode().Perm()
	}

	a.put(p, &entry{rec: Record{Mode: modeRegular | permBits(perm), Size: st.Size()}, src: src})

	return nil
}

// Symlink adds a symbolic link p pointing at target.
func (a *Archive) Symlink(p, target string) {
	a.put(p, &entry{rec: Record{Mode: modeSymlink | 0o777, Size: int64(len(target))}, data: []byte(target)})
}

// CharDev adds a character device node.
func (a *Archive) CharDev(p string, perm os.FileMode, major, minor uint32) {
	a.put(p, &entry{rec: Record{Mode: modeCharDev | permBits(perm), RdevMajor: major, RdevMinor: minor}})
}

// Has reports whether p is in the archive.
func (a *Archive) Has(p string) bool {
	name, err := clean(p)
	_, ok := a.entries[name]

	return err == nil && ok
}

// Names lists the members in the order WriteTo writes them.
func (a *Archive) Names() []string {
	names := make([]string, 0, len(a.entries))
	for n := range a.entries {
		names = append(names, n)
	}

	// Component-wise order: a directory comes before everything under it
	// (a prefix sorts first) and its whole subtree stays together.
	slices.SortFunc(names, func(x, y string) int {
		return slices.Compare(strings.Split(x, "/"), strings.Split(y, "/"))
	})

	return names
}

// WriteTo writes the archive as newc cpio to w.
func (a *Archive) WriteTo(w io.Writer) (int64, error) {
	cw := NewWriter(w)

	for _, name := range a.Names() {
		e := a.entries[name]
		rec := e.rec
		rec.MTime = a.mtime

		switch {
		case e.src != "":
			f, err := os.Open(e.src)
			if err != nil {
				return cw.off, fmt.Errorf("initramfs: %w", err)
			}

			rec.Data = f
			err = cw.WriteRecord(rec)
			f.Close()

			if err != nil {
				return cw.off, err
			}

			continue
		case e.data != nil:
			rec.Data = bytes.NewReader(e.data)
		}

		if err := cw.WriteRecord(rec); err != nil {
			return cw.off, err
		}
	}

	err := cw.Close()

	return cw.off, err
}

// WriteFile writes the archive into the file p.
func (a *Archive) WriteFile(p string) error {
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}

	if _, err := a.WriteTo(f); err != nil {
		f.Close()
		return err
	}

	return f.Close()
}
