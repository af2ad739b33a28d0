package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that readers see either the old
// or the new content, never a torn file: it writes a temporary file in the
// same directory, syncs it and renames it over path.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)

	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()

	// CreateTemp uses 0600; chmod explicitly so a wider perm is honoured
	// regardless of umask, and a narrower one is never widened.
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	// Persist the rename itself; without this a crash can lose the new name.
	// Some filesystems cannot sync a directory, so failures are ignored.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}

	return nil
}

// writeNewFile is WriteFileAtomic that refuses to replace an existing file,
// as `talosctl gen` does so it never clobbers a key.
func writeNewFile(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("file %q already exists", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check %s: %w", path, err)
	}

	return WriteFileAtomic(path, data, 0o600)
}

// LoadBundle reads and validates a secrets.yaml file.
func LoadBundle(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load secrets bundle: %w", err)
	}

	b, err := ParseBundle(data)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}

	return b, nil
}

// SaveBundle writes the bundle to path atomically with mode 0600.
func SaveBundle(path string, b *Bundle) error {
	data, err := b.Marshal()
	if err != nil {
		return err
	}

	return WriteFileAtomic(path, data, 0o600)
}
