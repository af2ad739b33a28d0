package check

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// discoverControlPlanes finds the nodes running etcd among c.Nodes, then
// adds the other members the first one lists (a control plane the user
// did not name), and makes sure every one is in c.Nodes.
func discoverControlPlanes(ctx context.Context, c *Cluster) ([]string, error) {
	var cps []string

	for _, r := range FanOut(ctx, c, c.Nodes, func(ctx context.Context, cl *client.Client) (*machine.ServiceList, error) {
		return cl.Services(ctx)
	}) {
		if r.Err == nil && slices.ContainsFunc(r.Value.GetServices(), func(svc *machine.ServiceInfo) bool { return svc.GetId() == "etcd" }) {
			cps = append(cps, r.Node)
		}
	}

	if len(cps) == 0 {
		return nil, nil
	}

	if lists, err := memberLists(ctx, c, cps[:1]); err == nil {
		for _, mb := range lists[0].Value.GetMembers() {
			for _, u := range mb.GetPeerUrls() {
				if pu, err := url.Parse(u); err == nil && !slices.Contains(cps, pu.Hostname()) {
					cps = append(cps, pu.Hostname())
				}
			}
		}
	}

	for _, cp := range cps {
		if !slices.Contains(c.Nodes, cp) {
			c.Nodes = append(c.Nodes, cp)
		}
	}

	return cps, nil
}

// EtcdHealthy: etcd runs and passes its health check on every control
// plane.
func EtcdHealthy(ctx context.Context, c *Cluster) error {
	if len(c.ControlPlanes) == 0 {
		return nil
	}

	return eachServiceList(ctx, c, c.ControlPlanes, func(list *machine.ServiceList) error {
		for _, svc := range list.GetServices() {
			if svc.GetId() != "etcd" {
				continue
			}

			switch msg := svc.GetHealth().GetLastMessage(); {
			case svc.GetState() == "Running" && svc.GetHealth().GetHealthy():
				return nil
			case svc.GetState() == "Running" && msg != "":
				return fmt.Errorf("etcd is running, not healthy yet: %s", msg)
			case svc.GetState() == "Running":
				return errors.New("etcd is running, not checked yet")
			default:
				return fmt.Errorf("etcd is %s: %s", strings.ToLower(svc.GetState()), msg)
			}
		}

		return errors.New("service \"etcd\" not found")
	})
}

// memberLists is etcd's member list as each of nodes sees it.
func memberLists(ctx context.Context, c *Cluster, nodes []string) ([]client.Result[*machine.EtcdMembers], error) {
	results := FanOut(ctx, c, nodes, func(ctx context.Context, cl *client.Client) (*machine.EtcdMembers, error) {
		return cl.EtcdMembers(ctx)
	})

	return results, NodeErrors(c, results)
}

// memberSummary is a member list in a comparable form.
func memberSummary(m *machine.EtcdMembers) []string {
	var out []string

	for _, mb := range m.GetMembers() {
		out = append(out, fmt.Sprintf("%x/%s/learner=%t", mb.GetId(), mb.GetHostname(), mb.GetIsLearner()))
	}

	slices.Sort(out)

	return out
}

// EtcdConsistent: every control plane sees the same members.
func EtcdConsistent(ctx context.Context, c *Cluster) error {
	if len(c.ControlPlanes) == 0 {
		return nil
	}

	results, err := memberLists(ctx, c, c.ControlPlanes)
	if err != nil {
		return err
	}

	first := memberSummary(results[0].Value)

	for _, r := range results[1:] {
		if got := memberSummary(r.Value); !slices.Equal(got, first) {
			return fmt.Errorf("%s: etcd members %s, but %s sees %s", r.Node, strings.Join(got, " "), results[0].Node, strings.Join(first, " "))
		}
	}

	return nil
}

// EtcdMembersAreControlPlanes: the members are the control planes, all
// voting, no more and no fewer.
func EtcdMembersAreControlPlanes(ctx context.Context, c *Cluster) error {
	if len(c.ControlPlanes) == 0 {
		return nil
	}

	results, err := memberLists(ctx, c, c.ControlPlanes)
	if err != nil {
		return err
	}

	var hosts []string

	for _, mb := range results[0].Value.GetMembers() {
		if mb.GetIsLearner() {
			return fmt.Errorf("etcd member %s is still a learner", mb.GetHostname())
		}

		for _, u := range mb.GetPeerUrls() {
			if pu, err := url.Parse(u); err == nil {
				hosts = append(hosts, pu.Hostname())
			}
		}
	}

	for _, cp := range c.ControlPlanes {
		if !slices.Contains(hosts, cp) {
			return fmt.Errorf("control plane node %s is not an etcd member (members at %s)", cp, strings.Join(hosts, ", "))
		}
	}

	if n := len(results[0].Value.GetMembers()); n != len(c.ControlPlanes) {
		return fmt.Errorf("etcd has %d members, but there are %d control plane nodes", n, len(c.ControlPlanes))
	}

	return nil
}
