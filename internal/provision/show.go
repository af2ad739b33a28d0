package provision

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Show reconstructs a cluster from the objects carrying its label. A partly destroyed or
// partly created cluster is shown as it is (e.g. without nodes); the error wraps ErrNotFound
// only when nothing carries the label.
func (d *Docker) Show(ctx context.Context, name string) (*Cluster, error) {
	objs, err := d.find(ctx, name)
	if err != nil {
		return nil, err
	}
	if objs.empty() {
		return nil, fmt.Errorf("cluster %q: %w", name, ErrNotFound)
	}

	cl := &Cluster{Name: name}
	if len(objs.networks) > 0 {
		res, err := d.api.NetworkInspect(ctx, objs.networks[0].ID, client.NetworkInspectOptions{})
		if err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("inspect network %s: %w", objs.networks[0].Name, err)
		}
		if err == nil {
			cl.Network = networkInfo(res.Network.Network)
		}
	}
	for _, c := range objs.containers {
		res, err := d.api.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		if err != nil {
			if isNotFound(err) {
				continue // removed since the listing: not part of the cluster any more
			}
			return nil, fmt.Errorf("inspect container %s: %w", c.Name, err)
		}
		cl.Nodes = append(cl.Nodes, nodeInfo(res.Container, cl.Network.Name))
	}
	slices.SortFunc(cl.Nodes, compareNodes)
	return cl, nil
}

// List returns the names of the clusters that have at least one object in Docker, sorted.
func (d *Docker) List(ctx context.Context) ([]string, error) {
	labeled := make(client.Filters).Add("label", LabelCluster)
	seen := map[string]bool{}
	cs, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labeled})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		seen[c.Labels[LabelCluster]] = true
	}
	ns, err := d.api.NetworkList(ctx, client.NetworkListOptions{Filters: labeled})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns.Items {
		seen[n.Labels[LabelCluster]] = true
	}
	vs, err := d.api.VolumeList(ctx, client.VolumeListOptions{Filters: labeled})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vs.Items {
		seen[v.Labels[LabelCluster]] = true
	}
	delete(seen, "")
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// networkInfo extracts the cluster network's addressing from an inspection.
func networkInfo(n network.Network) Network {
	out := Network{Name: n.Name, ID: n.ID}
	for _, cfg := range n.IPAM.Config {
		if cfg.Subnet.Addr().Is4() {
			out.CIDR, out.Gateway = cfg.Subnet, cfg.Gateway
			break
		}
	}
	if mtu, err := strconv.Atoi(n.Options["com.docker.network.driver.mtu"]); err == nil {
		out.MTU = mtu
	}
	return out
}

// nodeInfo extracts a node from a container inspection.
func nodeInfo(c container.InspectResponse, netName string) Node {
	n := Node{Name: strings.TrimPrefix(c.Name, "/"), ContainerID: c.ID}
	if c.Config != nil {
		n.Type = c.Config.Labels[LabelNodeType]
		n.Image = c.Config.Image
	}
	if c.State != nil {
		n.State = string(c.State.Status)
	}
	running := c.State != nil && c.State.Running
	if hc := c.HostConfig; hc != nil {
		n.NanoCPUs, n.Memory = hc.NanoCPUs, hc.Memory
		if !running {
			n.Ports = portMappings(hc.PortBindings)
		}
	}
	if ns := c.NetworkSettings; ns != nil {
		if running {
			n.Ports = portMappings(ns.Ports)
		}
		if ep := ns.Networks[netName]; ep != nil {
			n.IP = endpointIP(ep)
		} else {
			for _, ep := range ns.Networks {
				if n.IP = endpointIP(ep); n.IP.IsValid() {
					break
				}
			}
		}
	}
	return n
}

// endpointIP prefers the configured static address, which a stopped container keeps, to the
// current one, which it loses.
func endpointIP(ep *network.EndpointSettings) netip.Addr {
	if ep.IPAMConfig != nil && ep.IPAMConfig.IPv4Address.IsValid() {
		return ep.IPAMConfig.IPv4Address
	}
	return ep.IPAddress
}

// portMappings flattens a port map, sorted by container port.
func portMappings(pm network.PortMap) []PortMapping {
	var out []PortMapping
	for port, bindings := range pm {
		for _, b := range bindings {
			hp, _ := strconv.ParseUint(b.HostPort, 10, 16)
			out = append(out, PortMapping{
				ContainerPort: port.Num(),
				Proto:         string(port.Proto()),
				HostIP:        b.HostIP,
				HostPort:      uint16(hp),
			})
		}
	}
	slices.SortFunc(out, func(a, b PortMapping) int {
		return cmp.Or(cmp.Compare(a.ContainerPort, b.ContainerPort), strings.Compare(a.Proto, b.Proto),
			a.HostIP.Compare(b.HostIP), cmp.Compare(a.HostPort, b.HostPort))
	})
	return out
}

// compareNodes orders control planes first, then by name, with digit runs compared as numbers
// so that worker-10 follows worker-9.
func compareNodes(a, b Node) int {
	rank := func(t string) int {
		if t == TypeControlPlane {
			return 0
		}
		return 1
	}
	return cmp.Or(cmp.Compare(rank(a.Type), rank(b.Type)), naturalCompare(a.Name, b.Name))
}

// naturalCompare compares strings with runs of digits compared by numeric value.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
