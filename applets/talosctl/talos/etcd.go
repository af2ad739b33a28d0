package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

func NewBootstrapCommand(g *global.Args) *cobra.Command {
	var (
		recoverFrom string
		skipHash    bool
	)

	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Bootstrap the etcd cluster on the specified node.",
		Long: `When a control plane node boots for the first time, etcd waits for the
cluster to be bootstrapped: run this against exactly one control plane node.
It refuses a node whose etcd data directory is not empty, a node already
bootstrapped, and a worker.

--recover-from uploads a snapshot ('talosctl etcd snapshot') and starts the
one-member cluster from it; its hash is checked unless
--recover-skip-hash-check is given (needed for a copy of the db file).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
					if recoverFrom != "" {
						if err := uploadSnapshot(ctx, c, recoverFrom); err != nil {
							return struct{}{}, err
						}
					}

					resp, err := c.Machine.Bootstrap(ctx, &machine.BootstrapRequest{RecoverEtcd: recoverFrom != "", RecoverSkipHashCheck: skipHash})
					if err != nil {
						return struct{}{}, err
					}

					_, err = client.FirstMessage(resp.GetMessages())

					return struct{}{}, err
				})

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.Flags().StringVar(&recoverFrom, "recover-from", "", "recover etcd cluster from the snapshot")
	cmd.Flags().BoolVar(&skipHash, "recover-skip-hash-check", false, "skip integrity check when recovering etcd (use when recovering from data directory copy)")

	return cmd
}

// uploadSnapshot streams a snapshot file to the node (EtcdRecover).
func uploadSnapshot(ctx context.Context, c *client.Client, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("recover from: %w", err)
	}
	defer f.Close()

	stream, err := c.Machine.EtcdRecover(ctx)
	if err != nil {
		return err
	}

	buf := make([]byte, 256<<10)

	for {
		n, err := f.Read(buf)
		if n > 0 {
			if serr := stream.Send(&common.Data{Bytes: buf[:n]}); serr != nil {
				return fmt.Errorf("upload snapshot: %w", serr)
			}
		}

		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return fmt.Errorf("read snapshot %s: %w", path, err)
		}
	}

	resp, err := stream.CloseAndRecv()
	if err != nil {
		return fmt.Errorf("upload snapshot: %w", err)
	}

	_, err = client.FirstMessage(resp.GetMessages())

	return err
}

func NewEtcdCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Manage etcd",
		Long:  "Manage the embedded etcd of control plane nodes: members, leadership, snapshots, maintenance.",
	}

	alarm := &cobra.Command{Use: "alarm", Short: "Manage etcd alarms"}
	alarm.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List the etcd alarms for the node.",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return etcdAlarms(cmd, g, func(ctx context.Context, c *client.Client) ([]*machine.EtcdMemberAlarm, *common.Metadata, error) {
					resp, err := c.Machine.EtcdAlarmList(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, nil, err
					}

					m, err := client.FirstMessage(resp.GetMessages())

					return m.GetMemberAlarms(), m.GetMetadata(), err
				})
			},
		},
		&cobra.Command{
			Use:   "disarm",
			Short: "Disarm the etcd alarms for the node.",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return etcdAlarms(cmd, g, func(ctx context.Context, c *client.Client) ([]*machine.EtcdMemberAlarm, *common.Metadata, error) {
					resp, err := c.Machine.EtcdAlarmDisarm(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, nil, err
					}

					m, err := client.FirstMessage(resp.GetMessages())

					return m.GetMemberAlarms(), m.GetMetadata(), err
				})
			},
		},
	)

	cmd.AddCommand(
		newEtcdMembersCommand(g),
		newEtcdStatusCommand(g),
		newEtcdSnapshotCommand(g),
		etcdAction(g, "leave", "Tell nodes to leave etcd cluster", cobra.NoArgs, func(ctx context.Context, c *client.Client, _ []string) error {
			resp, err := c.Machine.EtcdLeaveCluster(ctx, &machine.EtcdLeaveClusterRequest{})
			if err == nil {
				_, err = client.FirstMessage(resp.GetMessages())
			}

			return err
		}),
		etcdAction(g, "remove-member <member ID>", "Remove the node from etcd cluster", cobra.ExactArgs(1), func(ctx context.Context, c *client.Client, args []string) error {
			id, err := strconv.ParseUint(args[0], 16, 64)
			if err != nil {
				return fmt.Errorf("member ID %q: want the hexadecimal ID 'etcd members' shows", args[0])
			}

			resp, err := c.Machine.EtcdRemoveMemberByID(ctx, &machine.EtcdRemoveMemberByIDRequest{MemberId: id})
			if err == nil {
				_, err = client.FirstMessage(resp.GetMessages())
			}

			return err
		}),
		etcdAction(g, "forfeit-leadership", "Tell node to forfeit etcd cluster leadership", cobra.NoArgs, func(ctx context.Context, c *client.Client, _ []string) error {
			resp, err := c.Machine.EtcdForfeitLeadership(ctx, &machine.EtcdForfeitLeadershipRequest{})
			if err != nil {
				return err
			}

			m, err := client.FirstMessage(resp.GetMessages())
			if err == nil && m.GetMember() != "" {
				fmt.Fprintf(cmdOut(ctx), "%s\n", m.GetMember())
			}

			return err
		}),
		etcdAction(g, "defrag", "Defragment etcd database on the node", cobra.NoArgs, func(ctx context.Context, c *client.Client, _ []string) error {
			resp, err := c.Machine.EtcdDefragment(ctx, &emptypb.Empty{})
			if err == nil {
				_, err = client.FirstMessage(resp.GetMessages())
			}

			return err
		}),
		alarm,
	)

	return cmd
}

type outKey struct{}

// cmdOut is the command's output, for actions that print a little.
func cmdOut(ctx context.Context) io.Writer {
	if w, ok := ctx.Value(outKey{}).(io.Writer); ok {
		return w
	}

	return io.Discard
}

// etcdAction is a command that runs one call on every node and prints
// only errors.
func etcdAction(g *global.Args, use, short string, args cobra.PositionalArgs, call func(ctx context.Context, c *client.Client, args []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				ctx := context.WithValue(cmd.Context(), outKey{}, cmd.OutOrStdout())

				results := global.FanOut(ctx, s, func(ctx context.Context, c *client.Client) (struct{}, error) {
					return struct{}{}, call(ctx, c, args)
				})

				return global.ReportErrors(cmd, results)
			})
		},
	}
}

func etcdAlarms(cmd *cobra.Command, g *global.Args, call func(ctx context.Context, c *client.Client) ([]*machine.EtcdMemberAlarm, *common.Metadata, error)) error {
	type reply struct {
		alarms []*machine.EtcdMemberAlarm
		md     *common.Metadata
	}

	return g.WithSession(false, func(s *global.Session) error {
		results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (reply, error) {
			a, md, err := call(ctx, c)
			return reply{a, md}, err
		})

		w := global.NewTable(cmd.OutOrStdout())
		fmt.Fprintln(w, "NODE\tMEMBER\tALARM")

		for _, r := range results {
			for _, a := range r.Value.alarms {
				fmt.Fprintf(w, "%s\t%016x\t%s\n", s.NodeName(r.Node, r.Value.md), a.GetMemberId(), a.GetAlarm())
			}
		}

		if err := w.Flush(); err != nil {
			return err
		}

		return global.ReportErrors(cmd, results)
	})
}

func newEtcdMembersCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:   "members",
		Short: "Get the list of etcd cluster members",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.EtcdMembers, error) {
					resp, err := c.Machine.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				w := global.NewTable(cmd.OutOrStdout())
				fmt.Fprintln(w, "NODE\tID\tHOSTNAME\tPEER URLS\tCLIENT URLS\tLEARNER")

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					for _, m := range r.Value.GetMembers() {
						fmt.Fprintf(w, "%s\t%016x\t%s\t%s\t%s\t%t\n", s.NodeName(r.Node, r.Value.GetMetadata()), m.GetId(), m.GetHostname(),
							global.JoinComma(m.GetPeerUrls()), global.JoinComma(m.GetClientUrls()), m.GetIsLearner())
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

func newEtcdStatusCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Get the status of etcd cluster member",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.EtcdStatus, error) {
					resp, err := c.Machine.EtcdStatus(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				w := global.NewTable(cmd.OutOrStdout())
				fmt.Fprintln(w, "NODE\tMEMBER\tDB SIZE\tIN USE\tLEADER\tRAFT INDEX\tRAFT TERM\tRAFT APPLIED INDEX\tLEARNER\tERRORS")

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					st := r.Value.GetMemberStatus()

					inUse := "0 B"
					if st.GetDbSize() > 0 {
						inUse = fmt.Sprintf("%s (%.2f%%)", global.HumanBytes(uint64(st.GetDbSizeInUse())), float64(st.GetDbSizeInUse())*100/float64(st.GetDbSize()))
					}

					fmt.Fprintf(w, "%s\t%016x\t%s\t%s\t%016x\t%d\t%d\t%d\t%t\t%s\n", s.NodeName(r.Node, r.Value.GetMetadata()),
						st.GetMemberId(), global.HumanBytes(uint64(st.GetDbSize())), inUse, st.GetLeader(), st.GetRaftIndex(), st.GetRaftTerm(),
						st.GetRaftAppliedIndex(), st.GetIsLearner(), global.OrDash(global.JoinComma(st.GetErrors())))
				}

				if err := w.Flush(); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}
}

func newEtcdSnapshotCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot <path>",
		Short: "Stream snapshot of the etcd node to the path.",
		Long: `Streams a consistent snapshot of etcd from one control plane node into <path>.
The file appears only once the whole snapshot has arrived. Clients with the
os:etcd:backup role may take snapshots and do nothing else.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				path := args[0]
				part := path + ".part"

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (int64, error) {
					return streamSnapshot(ctx, c, part)
				})

				if err := global.ReportErrors(cmd, results); err != nil {
					os.Remove(part) //nolint:errcheck // best effort

					return err
				}

				if err := os.Rename(part, path); err != nil {
					return fmt.Errorf("snapshot: %w", err)
				}

				fmt.Fprintf(cmd.OutOrStdout(), "etcd snapshot saved to %q (%d bytes)\n", path, results[0].Value)

				return nil
			})
		},
	}
}

// streamSnapshot writes the node's snapshot to path (0600, synced).
func streamSnapshot(ctx context.Context, c *client.Client, path string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, err
	}

	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()

	stream, err := c.Machine.EtcdSnapshot(ctx, &machine.EtcdSnapshotRequest{})
	if err != nil {
		return 0, err
	}

	cw := &countingWriter{w: f}
	if err := client.CopyStream(stream, cw); err != nil {
		return cw.n, err
	}

	return cw.n, f.Sync()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)

	return n, err
}
