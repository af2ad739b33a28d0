package talos

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/check"
)

func NewServiceCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "service [<id> [start|stop|restart|status]]",
		Aliases: []string{"services"},
		Short:   "Retrieve the state of a service (or all services), control service state",
		Long: `Service control command. If run without arguments, lists all the services and their state.
If service ID is specified, default action 'status' is executed which shows the status of a single service.
With actions 'start', 'stop', 'restart', service state is updated respectively.`,
		Args: cobra.MaximumNArgs(2),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return []string{"start", "stop", "restart", "status"}, cobra.ShellCompDirectiveNoFileComp
			}

			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			action := "status"
			if len(args) == 2 {
				action = args[1]
			}

			return g.WithSession(false, func(s *global.Session) error {
				switch {
				case len(args) == 0:
					return serviceList(cmd, s)
				case action == "status":
					return serviceStatus(cmd, s, args[0])
				case action == "start", action == "stop", action == "restart":
					return serviceAction(cmd, s, args[0], action)
				default:
					return fmt.Errorf("unsupported service action %q: use start, stop, restart or status", action)
				}
			})
		},
	}

	return cmd
}

// serviceLists asks every node for its services.
func serviceLists(ctx context.Context, s *global.Session) []client.Result[*machine.ServiceList] {
	return global.FanOut(ctx, s, func(ctx context.Context, c *client.Client) (*machine.ServiceList, error) {
		return c.Services(ctx)
	})
}

func serviceList(cmd *cobra.Command, s *global.Session) error {
	results := serviceLists(cmd.Context(), s)

	var lists []nodeServices

	for _, r := range results {
		if r.Err == nil {
			lists = append(lists, nodeServices{node: s.NodeName(r.Node, r.Value.GetMetadata()), services: r.Value.GetServices()})
		}
	}

	if err := writeServiceList(cmd.OutOrStdout(), lists, time.Now()); err != nil {
		return err
	}

	return global.ReportErrors(cmd, results)
}

type nodeServices struct {
	node     string
	services []*machine.ServiceInfo
}

// writeServiceList is talosctl's `service` table.
func writeServiceList(out io.Writer, lists []nodeServices, now time.Time) error {
	w := global.NewTable(out)
	fmt.Fprintln(w, "NODE\tSERVICE\tSTATE\tHEALTH\tLAST CHANGE\tLAST EVENT")

	for _, l := range lists {
		for _, svc := range l.services {
			lastChange, lastEvent := "", ""

			if evs := svc.GetEvents().GetEvents(); len(evs) > 0 {
				last := evs[len(evs)-1]
				lastChange = ago(now, last.GetTs().AsTime())
				lastEvent = last.GetMsg()
			}

			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", l.node, svc.GetId(), svc.GetState(), check.ServiceHealth(svc.GetHealth()), lastChange, lastEvent)
		}
	}

	return w.Flush()
}

// ago is a duration to the second, "3m4s ago".
func ago(now, t time.Time) string {
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func serviceStatus(cmd *cobra.Command, s *global.Session, id string) error {
	results := serviceLists(cmd.Context(), s)

	var found []nodeService

	for i, r := range results {
		if r.Err != nil {
			continue
		}

		var svc *machine.ServiceInfo

		for _, candidate := range r.Value.GetServices() {
			if candidate.GetId() == id {
				svc = candidate
			}
		}

		if svc == nil {
			results[i].Err = fmt.Errorf("service %q is not registered", id)
			continue
		}

		found = append(found, nodeService{node: s.NodeName(r.Node, r.Value.GetMetadata()), svc: svc})
	}

	if err := writeServiceStatus(cmd.OutOrStdout(), found, time.Now()); err != nil {
		return err
	}

	return global.ReportErrors(cmd, results)
}

type nodeService struct {
	node string
	svc  *machine.ServiceInfo
}

// writeServiceStatus is the `service ID` block: newest event first, one
// EVENTS label, as in the troubleshooting guide.
func writeServiceStatus(out io.Writer, services []nodeService, now time.Time) error {
	w := global.NewTable(out)

	for _, ns := range services {
		svc := ns.svc

		fmt.Fprintf(w, "NODE\t%s\n", ns.node)
		fmt.Fprintf(w, "ID\t%s\n", svc.GetId())
		fmt.Fprintf(w, "STATE\t%s\n", svc.GetState())
		fmt.Fprintf(w, "HEALTH\t%s\n", check.ServiceHealth(svc.GetHealth()))

		if msg := svc.GetHealth().GetLastMessage(); msg != "" {
			fmt.Fprintf(w, "LAST HEALTH MESSAGE\t%s\n", msg)
		}

		label := "EVENTS"
		evs := svc.GetEvents().GetEvents()

		for i := len(evs) - 1; i >= 0; i-- {
			ev := evs[i]
			fmt.Fprintf(w, "%s\t[%s]: %s (%s)\n", label, ev.GetState(), ev.GetMsg(), ago(now, ev.GetTs().AsTime()))
			label = ""
		}
	}

	return w.Flush()
}

func serviceAction(cmd *cobra.Command, s *global.Session, id, action string) error {
	results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (serviceReply, error) {
		switch action {
		case "start":
			return serviceReplyOf(c.Machine.ServiceStart(ctx, &machine.ServiceStartRequest{Id: id}))
		case "stop":
			return serviceReplyOf(c.Machine.ServiceStop(ctx, &machine.ServiceStopRequest{Id: id}))
		default:
			return serviceReplyOf(c.Machine.ServiceRestart(ctx, &machine.ServiceRestartRequest{Id: id}))
		}
	})

	w := global.NewTable(cmd.OutOrStdout())
	fmt.Fprintln(w, "NODE\tRESPONSE")

	for _, r := range results {
		if r.Err == nil {
			fmt.Fprintf(w, "%s\t%s\n", s.NodeName(r.Node, r.Value.md), r.Value.resp)
		}
	}

	if err := w.Flush(); err != nil {
		return err
	}

	return global.ReportErrors(cmd, results)
}

// serviceReply is one node's answer to a service start, stop or restart.
type serviceReply struct {
	md   *common.Metadata
	resp string
}

// serviceAnswer is what the three service action responses have in common.
type serviceAnswer interface {
	GetMetadata() *common.Metadata
	GetResp() string
}

func serviceReplyOf[M serviceAnswer, R interface{ GetMessages() []M }](r R, err error) (serviceReply, error) {
	if err != nil {
		return serviceReply{}, err
	}

	m, err := client.FirstMessage(r.GetMessages())
	if err != nil {
		return serviceReply{}, err
	}

	return serviceReply{md: m.GetMetadata(), resp: m.GetResp()}, nil
}
