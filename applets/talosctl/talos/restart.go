package talos

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// NewRestartCommand is `talosctl restart`: Talos's "restart a process".
func NewRestartCommand(g *global.Args) *cobra.Command {
	var kubernetes bool

	cmd := &cobra.Command{
		Use:   "restart <id>",
		Short: "Restart a process",
		Long: `Restarts a container by the ID 'talosctl containers' shows: a service in the
system namespace (the service is restarted), or with -k a Kubernetes container,
which is stopped so that its kubelet starts it again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, driver := containerScope(kubernetes)

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.Restart, error) {
					resp, err := c.Machine.Restart(ctx, &machine.RestartRequest{Namespace: ns, Id: args[0], Driver: driver})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				for _, r := range results {
					if r.Err == nil && len(s.Nodes) > 1 {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: restarted %s\n", s.NodeName(r.Node, r.Value.GetMetadata()), args[0])
					}
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	addKubernetesFlags(cmd, &kubernetes)

	return cmd
}
