package check

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// APIReady: every node's API answers.
func APIReady(ctx context.Context, c *Cluster) error {
	return NodeErrors(c, FanOut(ctx, c, c.Nodes, func(ctx context.Context, cl *client.Client) (struct{}, error) {
		resp, err := cl.Machine.Version(ctx, &emptypb.Empty{})
		if err != nil {
			return struct{}{}, err
		}

		_, err = client.FirstMessage(resp.GetMessages())

		return struct{}{}, err
	}))
}

// Booted: every node has finished its boot sequence.
func Booted(ctx context.Context, c *Cluster) error {
	return NodeErrors(c, FanOut(ctx, c, c.Nodes, func(ctx context.Context, cl *client.Client) (struct{}, error) {
		st, err := cl.MachineStatus(ctx)
		if err != nil {
			return struct{}{}, err
		}

		if st.Stage != "running" {
			return struct{}{}, fmt.Errorf("stage is %s", st.Stage)
		}

		return struct{}{}, nil
	}))
}

// ServicesUp: every node's services are up.
func ServicesUp(ctx context.Context, c *Cluster) error {
	return eachServiceList(ctx, c, c.Nodes, func(list *machine.ServiceList) error {
		var down []string

		for _, svc := range list.GetServices() {
			if !serviceUp(svc) {
				down = append(down, fmt.Sprintf("%s is %s (health %s)", svc.GetId(), svc.GetState(), ServiceHealth(svc.GetHealth())))
			}
		}

		if len(down) > 0 {
			return errors.New(strings.Join(down, ", "))
		}

		return nil
	})
}

// serviceUp: running and not failing its health check, or done on purpose.
func serviceUp(svc *machine.ServiceInfo) bool {
	switch svc.GetState() {
	case "Finished", "Skipped":
		return true
	case "Running":
		return svc.GetHealth().GetUnknown() || svc.GetHealth().GetHealthy()
	default:
		return false
	}
}

// ServiceHealth is a service's health in a word, as `services` shows it.
func ServiceHealth(h *machine.ServiceHealth) string {
	switch {
	case h == nil || h.GetUnknown():
		return "?"
	case h.GetHealthy():
		return "OK"
	default:
		return "Fail"
	}
}

// eachServiceList checks the services of every one of nodes with check,
// and reports each failing node.
func eachServiceList(ctx context.Context, c *Cluster, nodes []string, check func(*machine.ServiceList) error) error {
	results := FanOut(ctx, c, nodes, func(ctx context.Context, cl *client.Client) (*machine.ServiceList, error) {
		return cl.Services(ctx)
	})

	for i, r := range results {
		if r.Err == nil {
			results[i].Err = check(r.Value)
		}
	}

	return NodeErrors(c, results)
}
