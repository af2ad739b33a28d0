package talosctl

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

// discoverControlPlanes finds, among the target nodes, those running etcd,
// when the command was not told which they are.
func discoverControlPlanes(ctx context.Context, s *session) ([]string, error) {
	var cps []string

	for _, r := range serviceLists(ctx, s) {
		if r.Err == nil && slices.ContainsFunc(r.Value.GetServices(), func(svc *machine.ServiceInfo) bool { return svc.GetId() == "etcd" }) {
			cps = append(cps, r.Node)
		}
	}

	if len(cps) == 0 {
		return nil, nil
	}

	// The members' peer addresses name every control plane, also those
	// the talosconfig does not list.
	if lists, err := memberLists(ctx, s.on(cps[:1])); err == nil {
		for _, mb := range lists[0].Value.GetMembers() {
			for _, u := range mb.GetPeerUrls() {
				if pu, err := url.Parse(u); err == nil && !slices.Contains(cps, pu.Hostname()) {
					cps = append(cps, pu.Hostname())
				}
			}
		}
	}

	for _, cp := range cps {
		if !slices.Contains(s.nodes, cp) {
			s.nodes = append(s.nodes, cp)
		}
	}

	return cps, nil
}

func checkEtcdHealthy(ctx context.Context, s *session) error {
	if len(s.controlPlanes) == 0 {
		return nil
	}

	return eachServiceList(ctx, s.on(s.controlPlanes), func(list *machine.ServiceList) error {
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

// memberLists asks every control plane for its view of the members.
func memberLists(ctx context.Context, s *session) ([]client.Result[*machine.EtcdMembers], error) {
	cp := s
	if s.controlPlanes != nil {
		cp = s.on(s.controlPlanes)
	}

	results := fanOut(ctx, cp, func(ctx context.Context, c *client.Client) (*machine.EtcdMembers, error) {
		resp, err := c.Machine.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
		if err != nil {
			return nil, err
		}

		return firstMessage(resp.GetMessages())
	})

	return results, joinNodeErrors(results, cp)
}

func memberSummary(m *machine.EtcdMembers) []string {
	var out []string

	for _, mb := range m.GetMembers() {
		out = append(out, fmt.Sprintf("%x/%s/learner=%t", mb.GetId(), mb.GetHostname(), mb.GetIsLearner()))
	}

	slices.Sort(out)

	return out
}

func checkEtcdConsistent(ctx context.Context, s *session) error {
	if len(s.controlPlanes) == 0 {
		return nil
	}

	results, err := memberLists(ctx, s)
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

func checkEtcdMembersAreControlPlanes(ctx context.Context, s *session) error {
	if len(s.controlPlanes) == 0 {
		return nil
	}

	results, err := memberLists(ctx, s)
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

	for _, cp := range s.controlPlanes {
		if !slices.Contains(hosts, cp) {
			return fmt.Errorf("control plane node %s is not an etcd member (members at %s)", cp, strings.Join(hosts, ", "))
		}
	}

	if n := len(results[0].Value.GetMembers()); n != len(s.controlPlanes) {
		return fmt.Errorf("etcd has %d members, but there are %d control plane nodes", n, len(s.controlPlanes))
	}

	return nil
}
