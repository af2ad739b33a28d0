package imagestore

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

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/talosbox/talosbox/internal/atomicfile"
)

// Blobs lists the digests an image needs: its manifest, config and layers.
// A manifest or config that is missing or malformed is an error naming it.
func (s *Store) Blobs(im Image) ([]v1.Hash, error) {
	data, err := os.ReadFile(s.BlobPath(im.Descriptor.Digest))
	if err != nil {
		return nil, fmt.Errorf("%s: manifest: %w", im.Ref, err)
	}

	var m v1.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: manifest %s: %w", im.Ref, im.Descriptor.Digest, err)
	}

	out := []v1.Hash{im.Descriptor.Digest, m.Config.Digest}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}

	return out, nil
}

// collect removes blobs that no image of the index needs, so a layout
// rebuilt after a version change does not keep the old version's layers.
func (s *Store) collect() error {
	keep := map[string]bool{}

	for _, im := range s.Images {
		hs, err := s.Blobs(im)
		if err != nil {
			return err
		}

		for _, h := range hs {
			keep[h.Hex] = true
		}
	}

	dir := filepath.Join(s.Dir, "blobs", "sha256")

	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}

		return err
	}

	for _, e := range ents {
		if !keep[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}

	return nil
}

// DigestError is a blob whose content does not hash to its name.
type DigestError struct {
	Want, Got v1.Hash
	Path      string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("blob %s is corrupt: its content hashes to %s (%s)", e.Want, e.Got, e.Path)
}

// Verify hashes the blob h and checks it against its name.
func (s *Store) Verify(h v1.Hash) error {
	return verifyFile(s.BlobPath(h), h)
}

func verifyFile(path string, h v1.Hash) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	return VerifyReader(f, h)
}

// VerifyReader hashes what f holds against h.
func VerifyReader(f *os.File, h v1.Hash) error {
	if h.Algorithm != "sha256" {
		return fmt.Errorf("blob %s: unsupported digest algorithm %q", h, h.Algorithm)
	}

	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return fmt.Errorf("read blob %s: %w", h, err)
	}

	if got := hex.EncodeToString(sum.Sum(nil)); got != h.Hex {
		return &DigestError{Want: h, Got: v1.Hash{Algorithm: "sha256", Hex: got}, Path: f.Name()}
	}

	return nil
}

// CopyImages writes the images named refs from s into the layout at dir,
// each blob verified on the way: hard-linked when both are on one file
// system, copied otherwise. A ref s lacks is an error before anything is
// written.
func (s *Store) CopyImages(dir string, refs []string) error {
	var picked []Image

	for _, r := range refs {
		im, ok := s.Lookup(r)
		if !ok {
			return fmt.Errorf("image %s is not in %s", r, s.Dir)
		}

		picked = append(picked, im)
	}

	if err := ensureLayout(dir); err != nil {
		return err
	}

	dst := &Store{Dir: dir}
	byRef := map[string]v1.Descriptor{}

	if old, err := Open(dir); err == nil {
		for _, im := range old.Images {
			byRef[im.Ref] = im.Descriptor
		}
	}

	for _, im := range picked {
		hs, err := s.Blobs(im)
		if err != nil {
			return err
		}

		for _, h := range hs {
			if err := copyBlob(s.BlobPath(h), dst.BlobPath(h), h); err != nil {
				return fmt.Errorf("%s: %w", im.Ref, err)
			}
		}

		byRef[im.Ref] = im.Descriptor
	}

	return writeIndex(dir, byRef)
}

func ensureLayout(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return err
	}

	lf := filepath.Join(dir, "oci-layout")
	if _, err := os.Stat(lf); err == nil {
		return nil
	}

	return atomicfile.Write(lf, []byte(`{"imageLayoutVersion":"1.0.0"}`+"\n"), 0o644)
}

// copyBlob puts a verified copy of src at dst unless a verified one is
// there already.
func copyBlob(src, dst string, h v1.Hash) error {
	if verifyFile(dst, h) == nil {
		return nil
	}

	if err := verifyFile(src, h); err != nil {
		return err
	}

	return LinkOrCopy(src, dst)
}

// LinkOrCopy replaces dst with a hard link to src, or with a copy when the
// two are on different file systems; readers see the old dst or the new.
func LinkOrCopy(src, dst string) error {
	tmp := dst + ".tmp"
	os.Remove(tmp)

	// rename(2) of a hard link onto another link of the same inode does
	// nothing and leaves both names: done already, and no stray .tmp.
	if a, err := os.Stat(src); err == nil {
		if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
			return nil
		}
	}

	if err := os.Link(src, tmp); err != nil {
		if err := copyContent(src, tmp); err != nil {
			return err
		}
	}

	return os.Rename(tmp, dst)
}

func copyContent(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()

	st, err := in.Stat()
	if err != nil {
		return err
	}

	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}

	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}

	return out.Close()
}
