package talos

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	timeapi "github.com/talosbox/talosbox/internal/api/time"
	"github.com/talosbox/talosbox/internal/client"
)

// NewTimeCommand is `talosctl time`: each node's clock beside an NTP
// server's, read at the same moment.
func NewTimeCommand(g *global.Args) *cobra.Command {
	var server string

	cmd := &cobra.Command{
		Use:   "time [--check server]",
		Short: "Gets current server time",
		Long: `Asks each node's first time server (or the one given with --check) for the
time, and prints it beside the node's own clock read at the same moment: the
difference is how far the node's clock is off.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*timeapi.Time, error) {
					var (
						resp *timeapi.TimeResponse
						err  error
					)

					if server == "" {
						resp, err = c.Time.Time(ctx, &emptypb.Empty{})
					} else {
						resp, err = c.Time.TimeCheck(ctx, &timeapi.TimeRequest{Server: server})
					}

					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				w := global.NewTable(cmd.OutOrStdout())
				fmt.Fprintln(w, "NODE\tNTP-SERVER\tNODE-TIME\tNTP-SERVER-TIME")

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.NodeName(r.Node, r.Value.GetMetadata()), r.Value.GetServer(),
						r.Value.GetLocaltime().AsTime().String(), r.Value.GetRemotetime().AsTime().String())
				}

				if err := w.Flush(); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.Flags().StringVarP(&server, "check", "c", "", "checks server time against specified ntp server")

	return cmd
}
