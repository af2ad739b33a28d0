package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/talosbox/talosbox/internal/atomicfile"
)

// writeNewFile is atomicfile.Write that refuses to replace an existing file,
// as `talosctl gen` does so it never clobbers a key.
func writeNewFile(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("file %q already exists", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check %s: %w", path, err)
	}

	return atomicfile.Write(path, data, 0o600)
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

	return atomicfile.Write(path, data, 0o600)
}
