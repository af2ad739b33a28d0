package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

func NewLogsCommand(g *global.Args) *cobra.Command {
	var (
		follow     bool
		kubernetes bool
		tail       int32
	)

	cmd := &cobra.Command{
		Use:   "logs <service name>",
		Short: "Retrieve logs for a service",
		Long: `Retrieves a service's logs, or with -k a Kubernetes container's, named
<namespace>/<pod>:<container> as talosctl containers -k lists them. Container
log lines are the CRI's: <time> stdout|stderr F|P <message>.`,
		Example: `  talosctl -n 172.20.0.2 logs etcd
  talosctl -n 172.20.0.2 logs -k kube-system/kube-apiserver-node-1:kube-apiserver --tail 20 -f`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			namespace, driver := containerScope(kubernetes)

			req := &machine.LogsRequest{Namespace: namespace, Driver: driver, Id: args[0], Follow: follow, TailLines: tail}

			return g.WithSession(false, func(s *global.Session) error {
				return streamData(cmd, s, func(ctx context.Context, c *client.Client) (grpc.ServerStreamingClient[common.Data], error) {
					return c.Machine.Logs(ctx, req)
				})
			})
		},
	}

	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "specify if the logs should be streamed")
	addKubernetesFlags(cmd, &kubernetes)
	cmd.Flags().Int32Var(&tail, "tail", -1, "lines of log file to display (default is to show from the beginning)")

	return cmd
}

func NewDmesgCommand(g *global.Args) *cobra.Command {
	var follow, tail bool

	cmd := &cobra.Command{
		Use:   "dmesg",
		Short: "Retrieve kernel logs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &machine.DmesgRequest{Follow: follow, Tail: tail}

			return g.WithSession(false, func(s *global.Session) error {
				return streamData(cmd, s, func(ctx context.Context, c *client.Client) (grpc.ServerStreamingClient[common.Data], error) {
					return c.Machine.Dmesg(ctx, req)
				})
			})
		},
	}

	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "specify if the kernel log should be streamed")
	cmd.Flags().BoolVar(&tail, "tail", false, "specify if only new messages should be sent (makes sense only when combined with --follow)")

	return cmd
}

// interrupted is err, or nil when the command was interrupted (Ctrl-C):
// the way a stream that never ends is ended, even before it opened.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}

	return err
}

// streamData prints every node's stream of text, each line prefixed with
// its node as talosctl does ("172.20.0.2: ..."), until the streams end or
// the command is interrupted.
func streamData(cmd *cobra.Command, s *global.Session, open func(ctx context.Context, c *client.Client) (grpc.ServerStreamingClient[common.Data], error)) error {
	lw := &global.LineWriter{W: cmd.OutOrStdout()}

	results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
		stream, err := open(ctx, c)
		if err != nil {
			return struct{}{}, interrupted(ctx, err)
		}

		var (
			pending []byte
			prefix  string
		)

		defer func() {
			if len(pending) > 0 {
				lw.PrefixLines(prefix, pending, []byte("\n"))
			}
		}()

		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) || (err != nil && ctx.Err() != nil) {
				return struct{}{}, nil
			}

			if err != nil {
				return struct{}{}, err
			}

			if err := client.MetadataError(msg.GetMetadata()); err != nil {
				return struct{}{}, err
			}

			prefix = s.NodeName(global.NodeOf(ctx), msg.GetMetadata()) + ": "
			pending = lw.PrefixLines(prefix, pending, msg.GetBytes())
		}
	})

	return global.ReportErrors(cmd, results)
}

func NewEventsCommand(g *global.Args) *cobra.Command {
	var (
		tail     int32
		since    string
		duration time.Duration
	)

	cmd := &cobra.Command{
		Use:   "events",
		Short: "Stream runtime events",
		Long:  "Streams the nodes' runtime events: past ones selected by --tail, --since or --duration, then new ones as they happen.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &machine.EventsRequest{TailEvents: tail, TailId: since, TailSeconds: int32(duration / time.Second)}
			if since != "" || duration > 0 {
				// --since and --duration choose the history themselves.
				if !cmd.Flags().Changed("tail") {
					req.TailEvents = 0
				}
			}

			return g.WithSession(false, func(s *global.Session) error {
				return streamEvents(cmd, s, req)
			})
		},
	}

	cmd.Flags().Int32Var(&tail, "tail", 0, "show specified number of past events (use -1 to show full history, default is to show no history)")
	cmd.Flags().StringVar(&since, "since", "", "show events after the specified event ID (default is to show no history)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "show events for the past duration interval (one second resolution, default is to show no history)")

	return cmd
}

func streamEvents(cmd *cobra.Command, s *global.Session, req *machine.EventsRequest) error {
	lw := &global.LineWriter{W: cmd.OutOrStdout()}
	lw.Printf("%s\n", eventColumns("NODE", "ID", "EVENT", "ACTOR", "SOURCE", "MESSAGE"))

	results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
		stream, err := c.Machine.Events(ctx, req)
		if err != nil {
			return struct{}{}, interrupted(ctx, err)
		}

		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) || (err != nil && ctx.Err() != nil) {
				return struct{}{}, nil
			}

			if err != nil {
				return struct{}{}, err
			}

			if err := client.MetadataError(ev.GetMetadata()); err != nil {
				return struct{}{}, err
			}

			lw.Printf("%s\n", formatEvent(s.NodeName(global.NodeOf(ctx), ev.GetMetadata()), ev))
		}
	})

	return global.ReportErrors(cmd, results)
}

// eventColumns pads like a table would: events stream, so a tabwriter
// could only align after the end. The widths fit what the node sends: IDs
// of 22 characters, event types up to machine.ConfigLoadErrorEvent and
// actor IDs of 16.
func eventColumns(node, id, typ, actor, source, msg string) string {
	return strings.TrimRight(fmt.Sprintf("%-15s   %-22s   %-28s   %-16s   %-10s   %s", node, id, typ, actor, source, msg), " ")
}

// formatEvent prints an event's message, or its fields when it has none.
func formatEvent(node string, ev *machine.Event) string {
	msg := ev.GetMessage()

	if msg == "" && len(ev.GetFields()) > 0 {
		keys := make([]string, 0, len(ev.GetFields()))
		for k := range ev.GetFields() {
			if k != "actor_id" && k != "source" {
				keys = append(keys, k)
			}
		}

		sort.Strings(keys)

		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+ev.GetFields()[k])
		}

		msg = strings.Join(parts, " ")
	}

	return eventColumns(node, ev.GetId(), ev.GetType(), ev.GetFields()["actor_id"], ev.GetFields()["source"], msg)
}
