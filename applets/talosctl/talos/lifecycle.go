package talos

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// lifecycleAction runs action on every node and, with --wait, follows each
// node until it reaches goal.
func lifecycleAction(cmd *cobra.Command, g *global.Args, wf global.WaitFlags, goal global.WaitGoal, action func(ctx context.Context, c *client.Client) error) error {
	return g.WithSession(false, func(s *global.Session) error {
		results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (global.NodeState, error) {
			var before global.NodeState
			if wf.Wait {
				// The state before the action tells a node that came back
				// from one that has not gone down yet.
				before = global.MachineState(ctx, c)
			}

			return before, action(ctx, c)
		})

		if !wf.Wait {
			return global.ReportErrors(cmd, results)
		}

		// Only the nodes that accepted the action are followed.
		var ok []client.Result[global.NodeState]

		for _, r := range results {
			if r.Err == nil {
				ok = append(ok, r)
			}
		}

		waitErr := global.WaitForNodes(cmd, s, ok, goal, wf)

		if err := global.ReportErrors(cmd, results); err != nil {
			return err
		}

		return waitErr
	})
}

func NewRebootCommand(g *global.Args) *cobra.Command {
	var (
		wf   global.WaitFlags
		mode string
	)

	modes := map[string]machine.RebootRequest_Mode{
		"default":    machine.RebootRequest_DEFAULT,
		"powercycle": machine.RebootRequest_POWERCYCLE,
		"force":      machine.RebootRequest_FORCE,
	}

	cmd := &cobra.Command{
		Use:   "reboot",
		Short: "Reboot a node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, ok := modes[mode]
			if !ok {
				return fmt.Errorf("unknown reboot mode %q: use default, powercycle or force", mode)
			}

			return lifecycleAction(cmd, g, wf, global.GoalBack, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Machine.Reboot(ctx, &machine.RebootRequest{Mode: m})
				if err != nil {
					return err
				}

				_, err = client.FirstMessage(resp.GetMessages())

				return err
			})
		},
	}

	wf.Register(cmd)
	cmd.Flags().StringVarP(&mode, "mode", "m", "default", "select the reboot mode: default, powercycle (skips kexec), force (skips graceful teardown)")

	return cmd
}

func NewShutdownCommand(g *global.Args) *cobra.Command {
	var (
		wf    global.WaitFlags
		force bool
	)

	cmd := &cobra.Command{
		Use:   "shutdown",
		Short: "Shutdown a node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lifecycleAction(cmd, g, wf, global.GoalGone, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Machine.Shutdown(ctx, &machine.ShutdownRequest{Force: force})
				if err != nil {
					return err
				}

				_, err = client.FirstMessage(resp.GetMessages())

				return err
			})
		},
	}

	wf.Register(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "if true, force a node to shutdown without a cordon/drain")

	return cmd
}

// wipesState says whether a reset removes the node's config: an empty
// list wipes every system partition.
func wipesState(req *machine.ResetRequest) bool {
	if len(req.GetSystemPartitionsToWipe()) == 0 {
		return true
	}

	return slices.ContainsFunc(req.GetSystemPartitionsToWipe(), func(p *machine.ResetPartitionSpec) bool {
		return p.GetLabel() == "STATE" && p.GetWipe()
	})
}

func NewResetCommand(g *global.Args) *cobra.Command {
	var (
		wf       global.WaitFlags
		graceful bool
		reboot   bool
		labels   []string
	)

	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Reset a node",
		Long: `Wipes the node's system partitions (all of them by default, or those named by
--system-labels-to-wipe, e.g. STATE,EPHEMERAL) and powers it off, or reboots it
with --reboot. --graceful=false skips leaving etcd first.`,
		Example: `  talosctl reset --system-labels-to-wipe EPHEMERAL -n 10.5.0.2 --reboot=true`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &machine.ResetRequest{Graceful: graceful, Reboot: reboot}

			for _, l := range labels {
				l = strings.ToUpper(strings.TrimSpace(l))
				if !slices.Contains([]string{"STATE", "EPHEMERAL", "META"}, l) {
					return fmt.Errorf("unknown system partition label %q: use STATE, EPHEMERAL or META", l)
				}

				req.SystemPartitionsToWipe = append(req.SystemPartitionsToWipe, &machine.ResetPartitionSpec{Label: l, Wipe: true})
			}

			goal := global.GoalGone

			switch {
			case reboot && wipesState(req):
				// No config after the reboot: the node comes back in
				// maintenance mode, not running.
				goal = global.GoalMaintenance
			case reboot:
				goal = global.GoalBack
			}

			return lifecycleAction(cmd, g, wf, goal, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Machine.Reset(ctx, req)
				if err != nil {
					return err
				}

				_, err = client.FirstMessage(resp.GetMessages())

				return err
			})
		},
	}

	wf.Register(cmd)
	cmd.Flags().BoolVar(&graceful, "graceful", true, "if true, attempt to cordon/drain node and leave etcd (if applicable)")
	cmd.Flags().BoolVar(&reboot, "reboot", false, "if true, reboot the node after resetting instead of shutting down")
	cmd.Flags().StringSliceVar(&labels, "system-labels-to-wipe", nil, "if set, just wipe selected system disk partitions by label but keep other partitions intact")

	return cmd
}
