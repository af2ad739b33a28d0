package provision

import (
	"context"
	"fmt"
)

// Destroy removes every container, network and volume carrying the cluster's label: the
// containers in parallel (SIGTERM, then a kill after Options.StopTimeout), then the network,
// then the state volumes. It reports each removal to progress (may be nil). The error wraps
// ErrNotFound when nothing carries the label.
//
// Destroy works from labels alone, so it also cleans up after a create that crashed midway.
func (d *Docker) Destroy(ctx context.Context, name string, progress func(Event)) error {
	if name == "" {
		return fmt.Errorf("%w: destroy: cluster name is empty", ErrInvalidRequest)
	}
	objs, err := d.find(ctx, name)
	if err != nil {
		return err
	}
	if objs.empty() {
		return fmt.Errorf("destroy cluster %q: %w: no container, network or volume has the label %s=%s",
			name, ErrNotFound, LabelCluster, name)
	}
	if err := d.teardown(ctx, objs, newReporter(progress)); err != nil {
		return fmt.Errorf("destroy cluster %q: %w", name, err)
	}
	return nil
}
