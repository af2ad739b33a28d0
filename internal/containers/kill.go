package containers

import (
	"context"
	"syscall"

	"github.com/containerd/errdefs"
)

// Kill signals the task of the container that id names in a namespace of
// the containerd at addr: its containerd ID, or the "pod/container" name
// talosctl shows for a CRI container. It is how `talosctl restart` works,
// as in Talos: the owner (the kubelet, or the service's supervisor) sees
// the exit and starts the container again.
func Kill(ctx context.Context, addr, namespace, id string, sig syscall.Signal) error {
	stats, err := list(ctx, addr, namespace, false)
	if err != nil {
		return err
	}

	target := ""

	for _, s := range stats {
		if s.ID == id || s.Display == id {
			target = s.ID

			break
		}
	}

	if target == "" {
		return errorf(ErrNotFound, "container %q not found in namespace %s", id, namespace)
	}

	c, ctx, err := dialNamespace(ctx, addr, namespace)
	if err != nil {
		return err
	}
	defer c.Close()

	cntr, err := c.LoadContainer(ctx, target)
	if err != nil {
		return rpcError(addr, "container "+target, err)
	}

	task, err := cntr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return errorf(ErrNotFound, "container %q is not running", id)
	}

	if err != nil {
		return rpcError(addr, "task of "+target, err)
	}

	if err := task.Kill(ctx, sig); err != nil {
		return rpcError(addr, "kill "+target, err)
	}

	return nil
}
