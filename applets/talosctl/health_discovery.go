package talosctl

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// memberSpec is the part of a Member health discovery reads.
type memberSpec struct {
	Addresses   []string `yaml:"addresses"`
	MachineType string   `yaml:"machineType"`
}

// discoverMembers finds the cluster's nodes from the Members the asked
// nodes know (Talos's cluster discovery): control planes and workers by
// their first address. It returns nothing where discovery is off.
func discoverMembers(ctx context.Context, s *session) (controlPlanes, workers []string) {
	for _, r := range fanOut(ctx, s, func(ctx context.Context, c *client.Client) ([]*resource.Resource, error) {
		return listResources(ctx, c, cluster.MemberType)
	}) {
		if r.Err != nil {
			continue
		}

		for _, res := range r.Value {
			var m memberSpec
			if yaml.Unmarshal(res.GetSpecYaml(), &m) != nil || len(m.Addresses) == 0 {
				continue
			}

			addr := m.Addresses[0]

			switch m.MachineType {
			case "controlplane", "init":
				if !slices.Contains(controlPlanes, addr) {
					controlPlanes = append(controlPlanes, addr)
				}
			case "worker":
				if !slices.Contains(workers, addr) {
					workers = append(workers, addr)
				}
			}
		}
	}

	// In address order, so the discovered list reads the same every time.
	slices.SortFunc(controlPlanes, compareAddrs)
	slices.SortFunc(workers, compareAddrs)

	return controlPlanes, workers
}

// compareAddrs orders IP addresses numerically, anything else after them
// by text.
func compareAddrs(a, b string) int {
	pa, errA := netip.ParseAddr(a)
	pb, errB := netip.ParseAddr(b)

	switch {
	case errA == nil && errB == nil:
		return pa.Compare(pb)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	default:
		return strings.Compare(a, b)
	}
}

// discoverNodes fills the session's nodes and control planes when no
// node flag names them: from the members first, then from etcd's member
// list; it prints what it found, as Talos does.
func discoverNodes(ctx context.Context, out io.Writer, s *session) error {
	asked := slices.Clone(s.nodes)
	cps, workers := discoverMembers(ctx, s)

	if len(cps) > 0 {
		cps = runningEtcd(ctx, s.on(cps))
	}

	// etcd's member list names every control plane, also those whose
	// member record has not reached the asked node yet.
	etcdCPs, err := discoverControlPlanes(ctx, s)
	if err != nil {
		return err
	}

	for _, n := range etcdCPs {
		if !slices.Contains(cps, n) {
			cps = append(cps, n)
		}
	}

	// The asked nodes first, then control planes and workers, each in
	// address order.
	slices.SortFunc(cps, compareAddrs)

	s.nodes = asked
	for _, n := range slices.Concat(cps, workers) {
		if !slices.Contains(s.nodes, n) {
			s.nodes = append(s.nodes, n)
		}
	}

	s.controlPlanes = cps

	if len(s.nodes) > 0 {
		fmt.Fprintf(out, "discovered nodes: [%s]\n", quoteJoin(s.nodes))
	}

	return nil
}

// runningEtcd keeps the control planes that run etcd: a node started
// without it (machined --etcd=false) still gets every other check.
func runningEtcd(ctx context.Context, s *session) []string {
	cps := []string{}

	for _, r := range serviceLists(ctx, s) {
		if r.Err == nil && !slices.ContainsFunc(r.Value.GetServices(), func(svc *machine.ServiceInfo) bool { return svc.GetId() == "etcd" }) {
			continue
		}

		cps = append(cps, r.Node)
	}

	return cps
}
