package talos

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/version"
)

func NewVersionCommand(g *global.Args) *cobra.Command {
	var clientOnly, short, insecure bool

	cmd := &cobra.Command{
		Use:   "version",
		Short: "Prints the version",
		Long:  "Prints the client version and, without --client, the version of each target node.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if short {
				fmt.Fprintf(out, "Client:\n\t%s\n", version.Tag)
			} else {
				fmt.Fprintf(out, "Client:\n%s", version.Block())
			}

			if clientOnly {
				return nil
			}

			return g.WithSession(insecure, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.Version, error) {
					resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					fmt.Fprint(out, serverVersionBlock(s.NodeName(r.Node, r.Value.GetMetadata()), r.Value, short))
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.Flags().BoolVar(&clientOnly, "client", false, "print client version only")
	cmd.Flags().BoolVar(&short, "short", false, "print the short version")
	cmd.Flags().BoolVarP(&insecure, "insecure", "i", false, "use Talos maintenance mode API")

	return cmd
}

// serverVersionBlock is one node's "Server:" section, laid out like the
// client block above it.
func serverVersionBlock(node string, v *machine.Version, short bool) string {
	var sb strings.Builder

	info := v.GetVersion()

	sb.WriteString("Server:\n")
	fmt.Fprintf(&sb, "\tNODE:        %s\n", node)
	fmt.Fprintf(&sb, "\tTag:         %s\n", info.GetTag())

	if short {
		return sb.String()
	}

	fmt.Fprintf(&sb, "\tSHA:         %s\n", info.GetSha())
	fmt.Fprintf(&sb, "\tBuilt:       %s\n", info.GetBuilt())
	fmt.Fprintf(&sb, "\tGo version:  %s\n", info.GetGoVersion())
	fmt.Fprintf(&sb, "\tOS/Arch:     %s/%s\n", info.GetOs(), info.GetArch())

	if v.GetMaintenance() {
		sb.WriteString("\tMode:        maintenance\n")
	} else {
		sb.WriteString("\tEnabled:     RBAC\n")
	}

	return sb.String()
}
