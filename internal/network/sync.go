package network

import (
	"context"
	"fmt"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// syncOutputs makes the resources of (ns, typ) owned by owner exactly
// want (id -> spec): it writes what changed and destroys the rest.
// Resources of the type owned by other controllers are left alone.
func syncOutputs[S any](ctx context.Context, r bus.ControllerRuntime, owner, ns, typ string, want map[string]S) error {
	return bus.SyncOutputs(ctx, r, owner, ns, typ, want)
}

// issues collects what one pass of a controller could not apply, keyed by
// "<kind>/<spec id>".
type issues map[string]network.ApplyIssueSpec

func (is issues) pending(id, format string, args ...any) {
	is[id] = network.ApplyIssueSpec{State: network.IssuePending, Message: fmt.Sprintf(format, args...)}
}

func (is issues) fail(id string, err error) {
	is[id] = network.ApplyIssueSpec{State: network.IssueError, Message: err.Error()}
}

// sync publishes the issues as ApplyIssues owned by owner.
func (is issues) sync(ctx context.Context, r bus.ControllerRuntime, owner string) error {
	return syncOutputs(ctx, r, owner, network.Namespace, network.ApplyIssueType, map[string]network.ApplyIssueSpec(is))
}

// issueOutput is the output every controller that reports issues declares.
var issueOutput = bus.Output{Type: network.ApplyIssueType, Kind: bus.OutputShared}

// loop is the body every controller shares: reconcile on each wake-up,
// failing (and so restarting with backoff) on an error.
func loop(ctx context.Context, r bus.ControllerRuntime, extra <-chan error, reconcile func() error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-extra:
			return err
		case <-r.EventCh():
		}

		if err := reconcile(); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

// runWithKernel is the shape of every controller that talks to the kernel:
// open the managed namespace, subscribe to the kernel events in groups for
// this run only (a failed run is restarted and subscribes again), and call
// step on every wake-up.
func runWithKernel(ctx context.Context, r bus.ControllerRuntime, netns string, groups int, step func(ctx context.Context, k *kernel) error) error {
	k, err := openKernel(netns)
	if err != nil {
		return err
	}
	defer k.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	errc, err := k.watch(ctx, groups, r.QueueReconcile)
	if err != nil {
		return err
	}

	return loop(ctx, r, errc, func() error { return step(ctx, k) })
}

// runApply is runWithKernel for spec controllers: reconcile's issues are
// published, and while any remain it is retried every retryInterval even
// without a kernel event.
func runApply(ctx context.Context, r bus.ControllerRuntime, netns string, groups int, name string, reconcile func(ctx context.Context, k *kernel) (issues, error)) error {
	retry := time.AfterFunc(time.Hour, r.QueueReconcile)
	defer retry.Stop()

	return runWithKernel(ctx, r, netns, groups, func(ctx context.Context, k *kernel) error {
		is, err := reconcile(ctx, k)
		if err != nil {
			return err
		}

		if len(is) > 0 {
			retry.Reset(retryInterval)
		}

		return is.sync(ctx, r, name)
	})
}
