package imagebuild

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file, symlink or directory in a layer.
type entry struct {
	path string      // absolute path in the image
	src  string      // host file with the content (regular files)
	data string      // or the content itself, for small files we write
	link string      // symlink target
	dir  bool        // a directory
	mode os.FileMode // permission bits
}

// epoch is every member's mtime and the images' creation time: a fixed
// instant keeps layers and configs byte-identical across builds.
var epoch = time.Unix(0, 0).UTC()

// writeTar writes entries as a deterministic tar: sorted by path, with
// their parent directories, owned by root, all stamped with epoch.
func writeTar(w io.Writer, entries []entry) error {
	all := map[string]entry{}

	for _, e := range entries {
		if !path.IsAbs(e.path) {
			return fmt.Errorf("layer path %q is not absolute", e.path)
		}

		if old, dup := all[e.path]; dup && old != e {
			return fmt.Errorf("layer path %s given twice", e.path)
		}

		all[e.path] = e

		for d := path.Dir(e.path); d != "/"; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				all[d] = entry{path: d, dir: true, mode: 0o755}
			}
		}
	}

	names := slices.Sorted(func(yield func(string) bool) {
		for n := range all {
			if !yield(n) {
				return
			}
		}
	})

	tw := tar.NewWriter(w)

	for _, n := range names {
		e := all[n]
		hdr := &tar.Header{Name: strings.TrimPrefix(n, "/"), Mode: int64(e.mode), ModTime: epoch, Format: tar.FormatPAX}

		switch {
		case e.dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case e.link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.link
		case e.src == "":
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		default:
			st, err := os.Stat(e.src)
			if err != nil {
				return err
			}

			hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
		}

		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}

		if hdr.Typeflag == tar.TypeReg && e.src == "" {
			if _, err := io.WriteString(tw, e.data); err != nil {
				return err
			}
		} else if hdr.Typeflag == tar.TypeReg {
			if err := copyFile(tw, e.src, hdr.Size); err != nil {
				return err
			}
		}
	}

	return tw.Close()
}

func copyFile(w io.Writer, src string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()

	if n, err := io.Copy(w, f); err != nil || n != size {
		return fmt.Errorf("copy %s: %d of %d bytes: %v", src, n, size, err)
	}

	return nil
}

// layer is a gzip-compressed layer kept in the layer cache, with its
// digests computed once when it was written.
type layer struct {
	file   string
	Digest v1.Hash `json:"digest"`
	DiffID v1.Hash `json:"diffID"`
	Bytes  int64   `json:"size"`
}

// v1Layer adapts the cached layer to go-containerregistry without making
// it decompress the blob again for the diff ID.
func (l *layer) v1Layer() (v1.Layer, error) {
	return partial.CompressedToLayer(compressed{l})
}

type compressed struct{ l *layer }

func (c compressed) Digest() (v1.Hash, error)            { return c.l.Digest, nil }
func (c compressed) DiffID() (v1.Hash, error)            { return c.l.DiffID, nil }
func (c compressed) Compressed() (io.ReadCloser, error)  { return os.Open(c.l.file) }
func (c compressed) Size() (int64, error)                { return c.l.Bytes, nil }
func (c compressed) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

// makeLayer returns the layer holding entries, from the layer cache when
// one with the same content was made before.
func (b *builder) makeLayer(name string, entries []entry) (*layer, error) {
	var k key

	k.add("layer", "gzip-default")

	for _, e := range entries {
		k.add(e.path, e.link, fmt.Sprint(e.dir, e.mode), e.data)

		if e.src != "" {
			if err := k.addFile(e.src); err != nil {
				return nil, err
			}
		}
	}

	dir := filepath.Join(b.opts.Cache, "layers")
	id := k.String()
	file := filepath.Join(dir, id+".tar.gz")
	meta := filepath.Join(dir, id+".json")

	if data, err := os.ReadFile(meta); err == nil {
		l := &layer{file: file}
		if json.Unmarshal(data, l) == nil {
			if st, err := os.Stat(file); err == nil && st.Size() == l.Bytes {
				return l, nil
			}
		}
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	start := time.Now()

	tmp, err := os.CreateTemp(dir, ".tmp-layer-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	digest, diffID := sha256.New(), sha256.New()
	counter := &countWriter{w: io.MultiWriter(tmp, digest)}
	zw := gzip.NewWriter(counter)

	if err := writeTar(io.MultiWriter(zw, diffID), entries); err != nil {
		return nil, fmt.Errorf("layer %s: %w", name, err)
	}

	if err := zw.Close(); err != nil {
		return nil, err
	}

	if err := tmp.Close(); err != nil {
		return nil, err
	}

	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return nil, err
	}

	l := &layer{file: file, Digest: hashOf(digest), DiffID: hashOf(diffID), Bytes: counter.n}

	if err := os.Rename(tmp.Name(), file); err != nil {
		return nil, err
	}

	data, _ := json.Marshal(l)
	if err := os.WriteFile(meta, data, 0o644); err != nil {
		return nil, err
	}

	b.logf("layer %s: %s (%.1f MiB compressed) in %s", name, l.Digest.Hex[:12], float64(l.Bytes)/(1<<20), time.Since(start).Round(100*time.Millisecond))

	return l, nil
}

func hashOf(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)

	return n, err
}
