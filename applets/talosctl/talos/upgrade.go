package talos

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/installer"
	"github.com/talosbox/talosbox/internal/version"
)

func NewUpgradeCommand(g *global.Args) *cobra.Command {
	var (
		image                  string
		stage, force, preserve bool
		mode                   string
		wf                     global.WaitFlags
	)

	modes := map[string]machine.UpgradeRequest_RebootMode{
		"default":    machine.UpgradeRequest_DEFAULT,
		"powercycle": machine.UpgradeRequest_POWERCYCLE,
	}

	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Upgrade Talos on the target node",
		Long: `Install the installer image --image into the node's other boot slot and reboot into it.

The node pulls the image through its registry mirrors and writes it before it
answers, so a missing image, one that is not an installer or a full BOOT
partition is reported here and changes nothing. The slot it ran from stays as
the fallback: a boot of the new version that fails reverts to it by itself,
and 'talosctl rollback' goes back by hand. On a control plane, every etcd
member must be healthy and no other control plane upgrading (an etcd lock),
unless --force. Docker nodes cannot be upgraded: create them from a new image.

Examples:
  talosctl upgrade --nodes 10.5.0.2 --image ghcr.io/talosbox/installer:v0.2.0
  talosctl upgrade -n 10.5.0.2 -i ghcr.io/talosbox/installer:v0.2.0 --stage`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, ok := modes[mode]
			if !ok {
				return fmt.Errorf("unknown reboot mode %q: use default or powercycle", mode)
			}

			start := time.Now()

			err := lifecycleAction(cmd, g, wf, global.GoalBack, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Machine.Upgrade(ctx, &machine.UpgradeRequest{Image: image, Stage: stage, Force: force, Preserve: preserve, RebootMode: m})
				if err != nil {
					return err
				}

				msg, err := client.FirstMessage(resp.GetMessages())
				if err == nil && !wf.Wait {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s (actor %s)\n", global.NodeOf(ctx), msg.GetAck(), msg.GetActorId())
				}

				return err
			})
			if err != nil || !wf.Wait {
				return err
			}

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (string, error) {
					resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
					if err != nil {
						return "", err
					}

					v, err := client.FirstMessage(resp.GetMessages())

					return v.GetVersion().GetTag(), err
				})

				for _, r := range results {
					if r.Err == nil {
						fmt.Fprintf(cmd.OutOrStdout(), "%s\tupgraded: runs %s (%s)\n", s.NodeName(r.Node, nil), r.Value, time.Since(start).Round(time.Second))
					}
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.Flags().StringVarP(&image, "image", "i", installer.DefaultRepository+":"+version.Tag, "the installer image to upgrade to")
	cmd.Flags().BoolVarP(&stage, "stage", "s", false, "stage the upgrade: it is installed at the next boot, before anything uses the disk")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "skip the etcd checks (every member healthy, no other control plane upgrading)")
	cmd.Flags().BoolVarP(&preserve, "preserve", "p", false, "accepted for compatibility: the node's data is always kept (as in Talos 1.8+)")
	cmd.Flags().StringVarP(&mode, "reboot-mode", "m", "default", "select the reboot mode: default or powercycle (the same here: there is no kexec)")
	_ = cmd.Flags().MarkHidden("preserve")

	wf.Register(cmd)
	wf.QuietBack = true
	cmd.Flags().Lookup("wait").DefValue = "true"
	_ = cmd.Flags().Set("wait", "true")

	return cmd
}

func NewRollbackCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:   "rollback",
		Short: "Rollback a node to the previous installation",
		Long: `Point the node's boot loader back at the installation it ran before its last
upgrade, and reboot into it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lifecycleAction(cmd, g, global.WaitFlags{}, global.GoalBack, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Machine.Rollback(ctx, &machine.RollbackRequest{})
				if err != nil {
					return err
				}

				_, err = client.FirstMessage(resp.GetMessages())

				return err
			})
		},
	}
}
