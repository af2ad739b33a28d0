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
	a.put(p, &entry{rec: Record{Mode: modeDir | uint32(perm.Perm())}})
}

// Bytes adds a regular file with the given contents.
func (a *Archive) Bytes(p string, data []byte, perm os.FileMode) {
	a.put(p, &entry{rec: Record{Mode: modeRegular | uint32(perm.Perm()), Size: int64(len(data))}, data: data})
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

	a.put(p, &entry{rec: Record{Mode: modeRegular | uint32(perm.Perm()), Size: st.Size()}, src: src})

	return nil
}

// Symlink adds a symbolic link p pointing at target.
func (a *Archive) Symlink(p, target string) {
	a.put(p, &entry{rec: Record{Mode: modeSymlink | 0o777, Size: int64(len(target))}, data: []byte(target)})
}

// CharDev adds a character device node.
func (a *Archive) CharDev(p string, perm os.FileMode, major, minor uint32) {
	a.put(p, &entry{rec: Record{Mode: modeCharDev | uint32(perm.Perm()), RdevMajor: major, RdevMinor: minor}})
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
