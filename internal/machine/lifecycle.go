package machine

// The lifecycle requests the API makes of a running node: each is handed
// to Run, which owns the boot loop, and answered once handled.

import (
	"context"
	"fmt"
)

// ask hands a lifecycle request to Run and waits for it to be handled.
func (n *Node) ask(ctx context.Context, req request) error {
	req.done = make(chan error, 1)

	select {
	case n.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	}

	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reboot stops the services and boots again (in-process in container
// mode; the caller reboots the machine on metal).
func (n *Node) Reboot(ctx context.Context) error { return n.ask(ctx, request{kind: reqReboot}) }

// RebootForUpgrade reboots into an upgrade (or a rollback) just written:
// the node is cordoned and drained first (Options.Drain), and its stage
// reads upgrading meanwhile.
func (n *Node) RebootForUpgrade(ctx context.Context) error {
	return n.ask(ctx, request{kind: reqUpgradeReboot})
}

// Shutdown stops the node; Run then returns ErrPowerOff.
func (n *Node) Shutdown(ctx context.Context) error { return n.ask(ctx, request{kind: reqShutdown}) }

// ShutdownGracefully is Shutdown that cordons and drains the node's
// Kubernetes first (Options.Drain), as talosctl shutdown does without
// --force.
func (n *Node) ShutdownGracefully(ctx context.Context) error {
	return n.ask(ctx, request{kind: reqShutdown, drain: true})
}

// ResetOptions are `talosctl reset`'s.
type ResetOptions struct {
	Graceful bool
	Reboot   bool
	// SystemLabelsToWipe limits the wipe to these of STATE and EPHEMERAL;
	// empty wipes both.
	SystemLabelsToWipe []string
}

// Reset wipes the node and reboots or powers off.
func (n *Node) Reset(ctx context.Context, opts ResetOptions) error {
	for _, l := range opts.SystemLabelsToWipe {
		if l != "STATE" && l != "EPHEMERAL" {
			return fmt.Errorf("reset: unknown system label %q: use STATE or EPHEMERAL", l)
		}
	}

	return n.ask(ctx, request{kind: reqReset, reset: opts})
}
