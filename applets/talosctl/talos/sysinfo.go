package talos

import (
	"context"
	"fmt"
	"sort"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

func NewMountsCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "mounts",
		Aliases: []string{"mount"},
		Short:   "List mounts",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.Mounts, error) {
					resp, err := c.Machine.Mounts(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				w := global.NewTable(cmd.OutOrStdout())
				fmt.Fprintln(w, "NODE\tFILESYSTEM\tSIZE(GB)\tUSED(GB)\tAVAILABLE(GB)\tPERCENT USED\tMOUNTED ON")

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					node := s.NodeName(r.Node, r.Value.GetMetadata())

					for _, m := range r.Value.GetStats() {
						size, avail := float64(m.GetSize())*1e-9, float64(m.GetAvailable())*1e-9

						used := 0.0
						if size > 0 {
							used = 100 - avail/size*100
						}

						fmt.Fprintf(w, "%s\t%s\t%.02f\t%.02f\t%.02f\t%.02f%%\t%s\n", node, m.GetFilesystem(), size, size-avail, avail, used, m.GetMountedOn())
					}
				}

				if err := w.Flush(); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}
}

func NewMemoryCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "memory",
		Aliases: []string{"m", "free"},
		Short:   "Show memory usage",
		Long:    "Shows memory usage in MiB, from the node's /proc/meminfo (kB).",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.Memory, error) {
					resp, err := c.Machine.Memory(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				w := global.NewTable(cmd.OutOrStdout())
				fmt.Fprintln(w, "NODE\tTOTAL\tUSED\tFREE\tSHARED\tBUFFERS\tCACHE\tAVAILABLE")

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					m := r.Value.GetMeminfo()
					used := m.GetMemtotal() - m.GetMemfree() - m.GetCached() - m.GetBuffers()

					fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.NodeName(r.Node, r.Value.GetMetadata()),
						m.GetMemtotal()/1024, used/1024, m.GetMemfree()/1024, m.GetShmem()/1024,
						m.GetBuffers()/1024, m.GetCached()/1024, m.GetMemavailable()/1024)
				}

				if err := w.Flush(); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}
}

func NewProcessesCommand(g *global.Args) *cobra.Command {
	var sortBy string

	cmd := &cobra.Command{
		Use:     "processes",
		Aliases: []string{"ps"},
		Short:   "List running processes",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			less, ok := map[string]func(a, b *machine.ProcessInfo) bool{
				"rss": func(a, b *machine.ProcessInfo) bool { return a.GetResidentMemory() > b.GetResidentMemory() },
				"cpu": func(a, b *machine.ProcessInfo) bool { return a.GetCpuTime() > b.GetCpuTime() },
			}[sortBy]
			if !ok {
				return fmt.Errorf("unknown sort column %q: use rss or cpu", sortBy)
			}

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.Process, error) {
					resp, err := c.Machine.Processes(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				w := global.NewTable(cmd.OutOrStdout())
				fmt.Fprintln(w, "NODE\tPID\tSTATE\tTHREADS\tCPU-TIME\tVIRTMEM\tRESMEM\tCOMMAND")

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					procs := r.Value.GetProcesses()
					sort.SliceStable(procs, func(i, j int) bool { return less(procs[i], procs[j]) })

					for _, p := range procs {
						command := p.GetArgs()
						if command == "" {
							command = p.GetCommand()
						}

						fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%.2f\t%s\t%s\t%s\n", s.NodeName(r.Node, r.Value.GetMetadata()),
							p.GetPid(), p.GetState(), p.GetThreads(), p.GetCpuTime(),
							humanize.Bytes(p.GetVirtualMemory()), humanize.Bytes(p.GetResidentMemory()), command)
					}
				}

				if err := w.Flush(); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.Flags().StringVarP(&sortBy, "sort", "s", "rss", "column to sort output by (rss, cpu)")

	return cmd
}
