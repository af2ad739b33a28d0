package provision

import (
	"context"
	"fmt"
	"io"
)

// SaveImage writes ref from the local image store to w as `docker save`
// does (a docker-archive tar, names from its RepoTags), which is what a
// node's ImageService.Import takes. The error wraps ErrImageNotFound when
// the engine does not have ref: nothing is pulled.
func (d *Docker) SaveImage(ctx context.Context, ref string, w io.Writer) error {
	ok, err := d.ImageExists(ctx, ref)
	if err != nil {
		return err
	}

	if !ok {
		return fmt.Errorf("%w: %s is not in the Docker Engine at %s (docker images lists what is)", ErrImageNotFound, ref, d.Host())
	}

	rc, err := d.api.ImageSave(ctx, []string{ref})
	if err != nil {
		return fmt.Errorf("save image %s: %w", ref, err)
	}
	defer rc.Close()

	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("save image %s: %w", ref, err)
	}

	return nil
}
