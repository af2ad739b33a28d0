package cri

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/internal/atomicfile"
)

// File is one file of a generated tree.
type File struct {
	// Path is slash-separated and relative to the tree root.
	Path string
	// Mode is the permission bits; zero means 0600.
	Mode os.FileMode
	Data []byte
}

// dirMode is the mode of directories SyncTree creates: the trees hold
// registry credentials and keys.
const dirMode = 0o700

// SyncTree makes root hold exactly files. A changed file is replaced
// atomically, so containerd reading the tree sees the old or the new
// content; unchanged files are not touched, so their mtimes stay. Files
// and directories that are not wanted are removed, after the new files
// are in place. changed reports whether anything on disk changed.
func SyncTree(root string, files []File) (changed bool, err error) {
	want := make(map[string]File, len(files))

	for _, f := range files {
		p := path.Clean(f.Path)
		if f.Path == "" || p == "." || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return false, fmt.Errorf("cri: sync %s: invalid path %q", root, f.Path)
		}

		if _, dup := want[p]; dup {
			return false, fmt.Errorf("cri: sync %s: %q given twice", root, f.Path)
		}

		want[p] = f
	}

	// A wanted file cannot also be a directory of other wanted files.
	for p := range want {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := want[d]; ok {
				return false, fmt.Errorf("cri: sync %s: %q is both a file and a directory", root, d)
			}
		}
	}

	if err := os.MkdirAll(root, dirMode); err != nil {
		return false, fmt.Errorf("cri: sync: %w", err)
	}

	for _, p := range slices.Sorted(maps.Keys(want)) {
		c, err := syncFile(root, p, want[p])
		if err != nil {
			return changed, fmt.Errorf("cri: sync %s: %w", root, err)
		}

		changed = changed || c
	}

	c, err := removeStale(root, want)
	if err != nil {
		return changed, fmt.Errorf("cri: sync %s: %w", root, err)
	}

	return changed || c, nil
}

// syncFile writes one file unless it already has the content and mode.
func syncFile(root, rel string, f File) (bool, error) {
	mode := f.Mode.Perm()
	if mode == 0 {
		mode = 0o600
	}

	changed, err := ensureDir(root, path.Dir(rel))
	if err != nil {
		return false, err
	}

	full := filepath.Join(root, filepath.FromSlash(rel))

	fi, err := os.Lstat(full)

	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return changed, err
	case fi.IsDir():
		// A directory stands where the file goes: a rename cannot replace
		// it, so it goes first.
		if err := os.RemoveAll(full); err != nil {
			return changed, err
		}
	case fi.Mode().IsRegular():
		old, err := os.ReadFile(full)
		if err != nil {
			return changed, err
		}

		if bytes.Equal(old, f.Data) {
			if fi.Mode().Perm() == mode {
				return changed, nil
			}

			return true, os.Chmod(full, mode)
		}
	}

	// A symlink or device is replaced by the rename like an old file.
	return true, atomicfile.Write(full, f.Data, mode)
}

// ensureDir makes root/rel a directory, replacing any non-directory on
// the way (a stale file where a registry directory now goes).
func ensureDir(root, rel string) (bool, error) {
	if rel == "." {
		return false, nil
	}

	changed, err := ensureDir(root, path.Dir(rel))
	if err != nil {
		return changed, err
	}

	full := filepath.Join(root, filepath.FromSlash(rel))

	fi, err := os.Lstat(full)

	switch {
	case err == nil && fi.IsDir():
		return changed, nil
	case err == nil:
		if err := os.Remove(full); err != nil {
			return changed, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return changed, err
	}

	return true, os.Mkdir(full, dirMode)
}

// removeStale removes what is under root and not wanted, then the
// directories left empty, deepest first. root itself stays.
func removeStale(root string, want map[string]File) (bool, error) {
	var (
		stale []string
		dirs  []string
	)

	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}

		if rel == "." {
			return nil
		}

		if d.IsDir() {
			dirs = append(dirs, p)

			return nil
		}

		if _, ok := want[filepath.ToSlash(rel)]; !ok {
			stale = append(stale, p)
		}

		return nil
	})
	if err != nil {
		return false, err
	}

	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, err
		}
	}

	changed := len(stale) > 0

	// WalkDir visits a directory before its contents, so the reverse
	// order empties children before their parents.
	for _, p := range slices.Backward(dirs) {
		entries, err := os.ReadDir(p)
		if err != nil {
			return changed, err
		}

		if len(entries) == 0 {
			if err := os.Remove(p); err != nil {
				return changed, err
			}

			changed = true
		}
	}

	return changed, nil
}
