// Package imagestore reads and writes OCI image layouts (the directory
// format of the OCI image spec: oci-layout, index.json, blobs/sha256/...),
// the on-disk form of talosbox's image builds and image caches. Every
// image is named in index.json by its full reference, so one layout holds
// images of several registries.
package imagestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/talosbox/talosbox/internal/atomicfile"
)

// The annotations that name an image in index.json: the OCI one, and
// containerd's, which `ctr import` reads.
const (
	RefAnnotation        = "org.opencontainers.image.ref.name"
	ContainerdAnnotation = "io.containerd.image.name"
)

// Image is one named image of a layout.
type Image struct {
	Ref        string        // registry.k8s.io/kube-apiserver:v1.34.12
	Descriptor v1.Descriptor // its manifest
}

// Store is an OCI image layout on disk.
type Store struct {
	Dir    string
	Images []Image // sorted by Ref
}

// ErrNotLayout is returned by Open for a directory that is not an OCI
// image layout.
var ErrNotLayout = errors.New("not an OCI image layout")

// Open reads the layout in dir.
func Open(dir string) (*Store, error) {
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w (no oci-layout file)", dir, ErrNotLayout)
		}

		return nil, err
	}

	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}

	var idx v1.IndexManifest
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s: index.json: %w", dir, err)
	}

	s := &Store{Dir: dir}

	for _, d := range idx.Manifests {
		name := d.Annotations[ContainerdAnnotation]
		if name == "" {
			name = d.Annotations[RefAnnotation]
		}

		if name == "" {
			continue
		}

		s.Images = append(s.Images, Image{Ref: name, Descriptor: d})
	}

	slices.SortFunc(s.Images, func(a, b Image) int { return strings.Compare(a.Ref, b.Ref) })

	return s, nil
}

// Lookup finds an image by its full reference.
func (s *Store) Lookup(ref string) (Image, bool) {
	i, ok := slices.BinarySearchFunc(s.Images, ref, func(im Image, r string) int { return strings.Compare(im.Ref, r) })
	if !ok {
		return Image{}, false
	}

	return s.Images[i], true
}

// BlobPath is where the blob with digest h lives, whether or not it does.
func (s *Store) BlobPath(h v1.Hash) string {
	return filepath.Join(s.Dir, "blobs", h.Algorithm, h.Hex)
}

// Image opens a named image for reading.
func (s *Store) Image(im Image) (v1.Image, error) {
	p, err := layout.FromPath(s.Dir)
	if err != nil {
		return nil, err
	}

	return p.Image(im.Descriptor.Digest)
}

// Named is an image to write under a reference.
type Named struct {
	Ref   string
	Image v1.Image
}

// Write puts images into the layout at dir, creating it if needed: blobs
// that are there already are not written again, an image replaces any of
// the same reference, the others stay. Then blobs that no image uses any
// longer are removed. index.json is written last and atomically, so a
// reader sees the old set or the new one.
func Write(dir string, imgs []Named) (*Store, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return nil, fmt.Errorf("create layout %s: %w", dir, err)
		}
	}

	old, err := Open(dir)
	if err != nil {
		return nil, err
	}

	byRef := map[string]v1.Descriptor{}
	for _, im := range old.Images {
		byRef[im.Ref] = im.Descriptor
	}

	for _, n := range imgs {
		if err := p.WriteImage(n.Image); err != nil {
			return nil, fmt.Errorf("write %s: %w", n.Ref, err)
		}

		d, err := descriptor(n.Image)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Ref, err)
		}

		d.Annotations = map[string]string{RefAnnotation: n.Ref, ContainerdAnnotation: n.Ref}
		byRef[n.Ref] = d
	}

	if err := writeIndex(dir, byRef); err != nil {
		return nil, err
	}

	s, err := Open(dir)
	if err != nil {
		return nil, err
	}

	return s, s.collect()
}

func descriptor(img v1.Image) (v1.Descriptor, error) {
	d, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}

	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}

	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Descriptor{}, err
	}

	return v1.Descriptor{MediaType: mt, Size: size, Digest: d, Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture}}, nil
}

func writeIndex(dir string, byRef map[string]v1.Descriptor) error {
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}

	for _, ref := range slices.Sorted(func(yield func(string) bool) {
		for r := range byRef {
			if !yield(r) {
				return
			}
		}
	}) {
		idx.Manifests = append(idx.Manifests, byRef[ref])
	}

	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}

	return atomicfile.Write(filepath.Join(dir, "index.json"), append(data, '\n'), 0o644)
}
