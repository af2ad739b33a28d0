package imagebuild

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/talosbox/talosbox/internal/images"
)

// spec is one image: its reference, layers and how it starts.
type spec struct {
	ref        images.Ref
	version    string // what the main program reports, for the label
	layers     []*layer
	entrypoint []string
	cmd        []string
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/bin"

// assemble makes the OCI image for s. Configs carry no timestamps but
// epoch, so the same layers always give the same digest.
func assemble(s spec) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)

	adds := make([]mutate.Addendum, 0, len(s.layers))

	for _, l := range s.layers {
		vl, err := l.v1Layer()
		if err != nil {
			return nil, err
		}

		adds = append(adds, mutate.Addendum{
			Layer:     vl,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "talosbox imager", Comment: s.ref.String()},
		})
	}

	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, err
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}

	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{
		Entrypoint: s.entrypoint,
		Cmd:        s.cmd,
		Env:        []string{"PATH=" + defaultPath},
		Labels: map[string]string{
			"org.opencontainers.image.title":   s.ref.Component,
			"org.opencontainers.image.version": s.version,
			"org.opencontainers.image.vendor":  "talosbox (built from source)",
		},
	}

	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.ref, err)
	}

	return img, nil
}
