package check

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

// memberSpec is the part of a Member discovery reads.
type memberSpec struct {
	Addresses   []string `yaml:"addresses"`
	MachineType string   `yaml:"machineType"`
}

// Discover fills in c's nodes and control planes when the caller did not
// name them: from the cluster members the given nodes know (Talos's
// cluster discovery), then from etcd's member list. It prints what it
// found, as Talos does.
func Discover(ctx context.Context, out io.Writer, c *Cluster) error {
	asked := slices.Clone(c.Nodes)
	cps, workers := discoverMembers(ctx, c)

	if len(cps) > 0 {
		cps = runningEtcd(ctx, c, cps)
	}

	etcdCPs, err := discoverControlPlanes(ctx, c)
	if err != nil {
		return err
	}

	for _, n := range etcdCPs {
		if !slices.Contains(cps, n) {
			cps = append(cps, n)
		}
	}

	slices.SortFunc(cps, CompareAddrs)

	c.Nodes = asked
	for _, n := range slices.Concat(cps, workers) {
		if !slices.Contains(c.Nodes, n) {
			c.Nodes = append(c.Nodes, n)
		}
	}

	c.ControlPlanes = cps

	if len(c.Nodes) > 0 {
		fmt.Fprintf(out, "discovered nodes: [%s]\n", QuoteNodes(c.Nodes))
	}

	return nil
}

// discoverMembers finds the cluster's nodes from the Members c's nodes
// know: control planes and workers by their first address. It returns
// nothing where discovery is off.
func discoverMembers(ctx context.Context, c *Cluster) (controlPlanes, workers []string) {
	for _, r := range FanOut(ctx, c, c.Nodes, func(ctx context.Context, cl *client.Client) ([]*resource.Resource, error) {
		return cl.ListResources(ctx, cluster.MemberType)
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

	slices.SortFunc(controlPlanes, CompareAddrs)
	slices.SortFunc(workers, CompareAddrs)

	return controlPlanes, workers
}

// CompareAddrs orders IP addresses numerically, anything else after them
// by text.
func CompareAddrs(a, b string) int {
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

// runningEtcd keeps the control planes that run etcd, and those that do
// not answer yet: a node started without etcd (machined --etcd=false)
// still gets every other check.
func runningEtcd(ctx context.Context, c *Cluster, nodes []string) []string {
	cps := []string{}

	for _, r := range FanOut(ctx, c, nodes, func(ctx context.Context, cl *client.Client) (*machine.ServiceList, error) {
		return cl.Services(ctx)
	}) {
		if r.Err == nil && !slices.ContainsFunc(r.Value.GetServices(), func(svc *machine.ServiceInfo) bool { return svc.GetId() == "etcd" }) {
			continue
		}

		cps = append(cps, r.Node)
	}

	return cps
}
