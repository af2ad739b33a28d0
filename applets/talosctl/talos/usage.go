package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// NewUsageCommand is `talosctl usage` (du).
func NewUsageCommand(g *global.Args) *cobra.Command {
	var (
		human, all bool
		threshold  int64
		depth      int32
	)

	cmd := &cobra.Command{
		Use:     "usage [path1] [path2] ... [pathN]",
		Aliases: []string{"du"},
		Short:   "Retrieve a disk usage",
		Long: `Walks paths on the node (/ by default) as du does: each directory's size
(its files' apparent sizes, summed) once its subtree is walked; files too with
--all. --depth limits which entries are printed, not what is counted.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := args
			if len(paths) == 0 {
				paths = []string{"/"}
			}

			size := func(n int64) string {
				if human {
					return humanize.Bytes(uint64(n))
				}

				return strconv.FormatInt(n, 10)
			}

			return g.WithSession(false, func(s *global.Session) error {
				multi := len(s.Nodes) > 1
				w := global.NewTable(cmd.OutOrStdout())

				var (
					mu     sync.Mutex
					header bool
				)

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
					stream, err := c.Machine.DiskUsage(ctx, &machine.DiskUsageRequest{RecursionDepth: depth + 1, All: all, Threshold: threshold, Paths: paths})
					if err != nil {
						return struct{}{}, err
					}

					var errs error

					for {
						info, err := stream.Recv()
						if errors.Is(err, io.EOF) {
							return struct{}{}, errs
						}

						if err != nil {
							return struct{}{}, err
						}

						if info.GetError() != "" {
							errs = errors.Join(errs, fmt.Errorf("%s: %s", info.GetName(), info.GetError()))

							continue
						}

						mu.Lock()
						if !header {
							header = true

							if multi {
								fmt.Fprintln(w, "NODE\tSIZE\tNAME")
							} else {
								fmt.Fprintln(w, "SIZE\tNAME")
							}
						}

						if multi {
							fmt.Fprintf(w, "%s\t%s\t%s\n", s.NodeName(global.NodeOf(ctx), info.GetMetadata()), size(info.GetSize()), info.GetRelativeName())
						} else {
							fmt.Fprintf(w, "%s\t%s\n", size(info.GetSize()), info.GetRelativeName())
						}
						mu.Unlock()
					}
				})

				if err := w.Flush(); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.Flags().BoolVarP(&human, "humanize", "H", false, "humanize size and time in the output")
	cmd.Flags().BoolVarP(&all, "all", "a", false, "write counts for all files, not just directories")
	cmd.Flags().Int64VarP(&threshold, "threshold", "t", 0, "threshold exclude entries smaller than SIZE if positive, or entries greater than SIZE if negative")
	cmd.Flags().Int32VarP(&depth, "depth", "d", 0, "maximum recursion depth")

	return cmd
}
