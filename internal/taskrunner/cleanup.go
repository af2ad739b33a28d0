package taskrunner

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// cleanup deletes the task (killing what is left of it), the container
// and its snapshot. task is nil if it was not created.
func cleanup(bg context.Context, cnt client.Container, task client.Task) error {
	ctx, cancel := context.WithTimeout(bg, cleanupTimeout)
	defer cancel()

	var err error
	if task != nil {
		err = deleteOwnTask(ctx, task)
	} else {
		err = deleteTask(ctx, cnt)
	}

	if err != nil {
		return err
	}

	if err := cnt.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting container %s: %w", cnt.ID(), err)
	}

	return nil
}

// deleteOwnTask deletes the task this run created. Delete first waits
// until the output is copied, that is until every process holding the
// task's stdout or stderr has closed it. The shim kills the container's
// processes when its main one exits, but one that left the container's
// cgroup with the pipe open would hold the delete up for ever: after
// drainTimeout the log stops being copied and the delete goes on.
func deleteOwnTask(ctx context.Context, task client.Task) error {
	drain := time.AfterFunc(drainTimeout, func() {
		if tio := task.IO(); tio != nil {
			_ = tio.Close() // only stops the copy; the delete goes on
		}
	})
	defer drain.Stop()

	if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting task %s: %w", task.ID(), err)
	}

	return nil
}

// removeStale deletes a container, task and snapshot with this ID that an
// earlier run left behind (machined crashed, or a cleanup failed):
// containerd keeps them across restarts, and they would make creating
// the container fail.
func (r *runner) removeStale(ctx context.Context, c *client.Client, sn string) error {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()

	cnt, err := c.LoadContainer(ctx, r.o.ID)

	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("loading container %s: %w", r.o.ID, err)
	default:
		if err := deleteTask(ctx, cnt); err != nil {
			return err
		}

		if err := cnt.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("deleting container %s: %w", r.o.ID, err)
		}
	}

	// A snapshot outlives its container when a crash came between
	// deleting the one and the other.
	if err := c.SnapshotService(sn).Remove(ctx, r.o.ID); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing snapshot %s: %w", r.o.ID, err)
	}

	return nil
}

// deleteTask kills and deletes cnt's task, if it has one.
func deleteTask(ctx context.Context, cnt client.Container) error {
	task, err := cnt.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}

	if err != nil {
		return fmt.Errorf("loading task %s: %w", cnt.ID(), err)
	}

	if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting task %s: %w", cnt.ID(), err)
	}

	return nil
}
