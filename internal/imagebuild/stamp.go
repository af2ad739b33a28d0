package imagebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// key is a cache key: the hash of everything that decides an output. Two
// builds with equal keys produce equal bytes, so an output found under its
// key is reused as it is.
type key struct{ h []string }

func (k *key) add(parts ...string) { k.h = append(k.h, parts...) }

// addFile adds a file's content hash under its name.
func (k *key) addFile(path string) error {
	sum, err := fileDigest(path)
	if err != nil {
		return err
	}

	k.add(filepath.Base(path), sum)

	return nil
}

// addDir adds every regular file below dir, sorted, by relative path.
func (k *key) addDir(dir string) error {
	var files []string

	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}

		return err
	})
	if err != nil {
		return err
	}

	sort.Strings(files)

	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)

		sum, err := fileDigest(f)
		if err != nil {
			return err
		}

		k.add(rel, sum)
	}

	return nil
}

func (k *key) String() string {
	b, _ := json.Marshal(k.h)
	s := sha256.Sum256(b)

	return hex.EncodeToString(s[:])
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()

	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}

	return hex.EncodeToString(h.Sum(nil)), nil
}

// stampName marks a finished output directory; it is written last, so a
// directory without it is a build that was interrupted and is redone.
const stampName = ".complete"

func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, stampName))
	return err == nil
}

// finish renames a finished temporary directory to its keyed name and
// stamps it, so readers never see half an output.
func finish(tmp, dir string) error {
	if err := os.WriteFile(filepath.Join(tmp, stampName), nil, 0o644); err != nil {
		return err
	}

	if err := os.RemoveAll(dir); err != nil {
		return err
	}

	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}

	return nil
}
