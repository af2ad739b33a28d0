package provision

import (
	"context"
	"fmt"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// PrivilegedAllowed says whether the engine can run a privileged
// container: it starts one from image (which must have /talosbox) running
// `talosbox --version`, and removes it. An engine that itself lacks
// capabilities (dockerd in a sandbox without CAP_SYS_RESOURCE, as here)
// accepts the create and fails the start ("unable to apply caps"); that
// answer is false, not an error.
func (d *Docker) PrivilegedAllowed(ctx context.Context, image string) (bool, error) {
	res, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Entrypoint: []string{"/talosbox", "--version"}},
		HostConfig: &container.HostConfig{
			NetworkMode: "none",
			Privileged:  true,
		},
	})
	if err != nil {
		return false, fmt.Errorf("probe privileged containers: %w", err)
	}

	defer func() {
		_, _ = d.api.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
	}()

	if _, err := d.api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}

		return false, nil
	}

	return true, nil
}
