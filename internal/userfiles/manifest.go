package userfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/atomicfile"
)

// What configs wrote, kept on STATE so that nothing a config wrote
// outlives it. Every file machine.files writes is listed with the config
// (and the generation: one more at every sync that changed the disk)
// that wrote it, the hash of what was written, the directories made for
// it and, when a file was there before a config touched it, that
// original: its content is kept beside the manifest. A config that no
// longer lists a file gets the original back, or the file removed (and
// the directories made for it, once empty); an append is made onto the
// original, not onto what the last boot left, so it never appends twice.
//
// A file that changed since it was written (a reboot emptied the tmpfs it
// was on, an image update shipped another, someone edited it) is not the
// config's any more: its current content becomes the original a config
// writes over, and a config that drops it leaves it alone.

// Files on STATE.
const (
	// ManifestFile lists what configs wrote.
	ManifestFile = "machine-files.yaml"
	// OriginalsDir keeps the originals, named by their sha256.
	OriginalsDir = "machine-files.originals"
)

// Manifest is ManifestFile.
type Manifest struct {
	// Generation counts the syncs that changed the node's files.
	Generation int `yaml:"generation"`
	// Root is the directory paths are under ("/" on a node that owns
	// its root).
	Root  string  `yaml:"root"`
	Files []Entry `yaml:"files"`
}

// Entry is one file a config wrote.
type Entry struct {
	// Path is the file as the config names it.
	Path string `yaml:"path"`
	// Generation is the sync that last wrote it; Config the sha256 of the
	// config that did.
	Generation int    `yaml:"generation"`
	Config     string `yaml:"config,omitempty"`
	// Written are the states (stateHash) this package left the file in:
	// one, or two while a sync is under way (a crash then leaves either).
	Written []string `yaml:"written"`
	// Original is what was there before; nil when nothing was.
	Original *Original `yaml:"original,omitempty"`
	// Dirs are the directories made for the file, outermost first.
	Dirs []string `yaml:"dirs,omitempty"`
}

// Original is what a file was before a config wrote it: a regular file
// (its content is kept in OriginalsDir) or a symbolic link.
type Original struct {
	SHA256  string `yaml:"sha256,omitempty"`
	Mode    uint32 `yaml:"mode,omitempty"`
	Symlink string `yaml:"symlink,omitempty"`
}

// LoadManifest reads dir's manifest; an empty one when there is none.
func LoadManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &Manifest{}, nil
	}

	if err != nil {
		return nil, fmt.Errorf("machine files manifest: %w", err)
	}

	var m Manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("machine files manifest %s is corrupt: %w", filepath.Join(dir, ManifestFile), err)
	}

	return &m, nil
}

func (m *Manifest) save(dir string) error {
	data, err := yaml.Marshal(m)
	if err != nil {
		return fmt.Errorf("machine files manifest: %w", err)
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("machine files manifest: %w", err)
	}

	if err := atomicfile.Write(filepath.Join(dir, ManifestFile), data, 0o600); err != nil {
		return fmt.Errorf("machine files manifest: %w", err)
	}

	return nil
}

func (m *Manifest) entry(p string) *Entry {
	for i := range m.Files {
		if m.Files[i].Path == p {
			return &m.Files[i]
		}
	}

	return nil
}

// keepOriginal stores data in dir's originals and names it.
func keepOriginal(dir string, data []byte) (string, error) {
	sum := contentHash(data)

	p := filepath.Join(dir, OriginalsDir, sum)
	if _, err := os.Stat(p); err == nil {
		return sum, nil
	}

	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("keep the original: %w", err)
	}

	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return "", fmt.Errorf("keep the original: %w", err)
	}

	return sum, nil
}

func loadOriginal(dir, sum string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, OriginalsDir, sum))
	if err != nil {
		return nil, fmt.Errorf("the original: %w", err)
	}

	if contentHash(data) != sum {
		return nil, fmt.Errorf("the original %s is corrupt", filepath.Join(dir, OriginalsDir, sum))
	}

	return data, nil
}

// pruneOriginals removes the originals no entry refers to.
func (m *Manifest) pruneOriginals(dir string) error {
	entries, err := os.ReadDir(filepath.Join(dir, OriginalsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}

	if err != nil {
		return err
	}

	var errs []error

	for _, e := range entries {
		used := slices.ContainsFunc(m.Files, func(f Entry) bool { return f.Original != nil && f.Original.SHA256 == e.Name() })
		if !used {
			if err := os.Remove(filepath.Join(dir, OriginalsDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}

	return errors.Join(errs...)
}

func contentHash(data []byte) string {
	sum := sha256.Sum256(data)

	return hex.EncodeToString(sum[:])
}
