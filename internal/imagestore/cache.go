package imagestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// CacheOptions say which images an image cache gets, and from where.
type CacheOptions struct {
	Dir    string   // the layout to write
	Images []string // references
	// Sources are layouts searched first, in order (talosbox's own build).
	Sources []string
	// Remote allows pulling what no source holds from its registry;
	// Insecure allows plain HTTP and unverified TLS for that.
	Remote, Insecure bool
	Platform         v1.Platform
	Log              io.Writer
}

// CreateCache writes the images into the layout at Dir: from a source
// layout when one has the reference, else from its registry. An image
// found nowhere is an error naming each place tried, and nothing of the
// batch is indexed then.
func CreateCache(ctx context.Context, o CacheOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}

	var sources []*Store

	for _, dir := range o.Sources {
		st, err := Open(dir)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrNotLayout) {
			continue
		}

		if err != nil {
			return err
		}

		sources = append(sources, st)
	}

	local := map[*Store][]string{}

	var remote []Named

	for _, ref := range o.Images {
		canonical, err := Canonical(ref)
		if err != nil {
			return err
		}

		if st := find(sources, canonical); st != nil {
			fmt.Fprintf(o.Log, "%s: from %s\n", canonical, st.Dir)
			local[st] = append(local[st], canonical)

			continue
		}

		if !o.Remote {
			return fmt.Errorf("image %s is in none of %v (run make images to build it, or allow pulls from its registry)", canonical, o.Sources)
		}

		img, err := pull(ctx, canonical, o)
		if err != nil {
			return fmt.Errorf("image %s: not in %v, and its registry: %w", canonical, o.Sources, err)
		}

		fmt.Fprintf(o.Log, "%s: from its registry\n", canonical)
		remote = append(remote, Named{Ref: canonical, Image: img})
	}

	for st, refs := range local {
		if err := st.CopyImages(o.Dir, refs); err != nil {
			return err
		}
	}

	if len(remote) > 0 {
		if _, err := Write(o.Dir, remote); err != nil {
			return err
		}
	}

	if len(local) == 0 && len(remote) == 0 {
		return ensureLayout(o.Dir)
	}

	return nil
}

func find(sources []*Store, ref string) *Store {
	for _, st := range sources {
		if _, ok := st.Lookup(ref); ok {
			return st
		}
	}

	return nil
}

// Canonical spells a reference as the layouts index it: registry and tag
// explicit ("nginx" is "docker.io/library/nginx:latest").
func Canonical(ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}

	reg := r.Context().RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}

	return reg + "/" + r.Context().RepositoryStr() + sep(r) + r.Identifier(), nil
}

func sep(r name.Reference) string {
	if _, ok := r.(name.Digest); ok {
		return "@"
	}

	return ":"
}

func pull(ctx context.Context, ref string, o CacheOptions) (v1.Image, error) {
	var opts []name.Option
	if o.Insecure {
		opts = append(opts, name.Insecure)
	}

	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return nil, err
	}

	return remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(o.Platform))
}
