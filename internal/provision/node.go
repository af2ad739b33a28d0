package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// StopNode stops a node's container: SIGTERM to PID 1, then SIGKILL after timeout (rounded up
// to whole seconds). Stopping a stopped node is not an error. The node keeps its volume, its
// IP and its configuration, for StartNode.
func (d *Docker) StopNode(ctx context.Context, cluster, node string, timeout time.Duration) error {
	id, err := d.nodeContainer(ctx, cluster, node)
	if err != nil {
		return err
	}
	if _, err := d.api.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: stopSeconds(timeout)}); err != nil {
		return fmt.Errorf("stop node %s of cluster %q: %w", node, cluster, err)
	}
	return nil
}

// StartNode starts a stopped node's container. Starting a running node is not an error. A
// port published on a random host port may get a different one: see Show.
func (d *Docker) StartNode(ctx context.Context, cluster, node string) error {
	id, err := d.nodeContainer(ctx, cluster, node)
	if err != nil {
		return err
	}
	if _, err := d.api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start node %s of cluster %q: %w", node, cluster, err)
	}
	return nil
}

// NodeStats takes a one-shot resource sample of a running node, for the memory report.
func (d *Docker) NodeStats(ctx context.Context, cluster, node string) (Stats, error) {
	id, err := d.nodeContainer(ctx, cluster, node)
	if err != nil {
		return Stats{}, err
	}
	ins, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return Stats{}, fmt.Errorf("inspect node %s of cluster %q: %w", node, cluster, err)
	}
	// A stopped container's stats are all zeros, which would read as "uses no memory".
	if ins.Container.State == nil || !ins.Container.State.Running {
		return Stats{}, fmt.Errorf("stats of node %s of cluster %q: the node is not running", node, cluster)
	}

	res, err := d.api.ContainerStats(ctx, id, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		return Stats{}, fmt.Errorf("stats of node %s of cluster %q: %w", node, cluster, err)
	}
	defer res.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return Stats{}, fmt.Errorf("stats of node %s of cluster %q: decoding: %w", node, cluster, err)
	}
	return Stats{Memory: memoryWithoutCache(s.MemoryStats), MemoryLimit: s.MemoryStats.Limit}, nil
}

// memoryWithoutCache is the figure `docker stats` shows: usage minus the inactive page cache,
// which the kernel reclaims before the cgroup limit bites.
func memoryWithoutCache(m container.MemoryStats) uint64 {
	if v, ok := m.Stats["total_inactive_file"]; ok && v < m.Usage { // cgroup v1
		return m.Usage - v
	}
	if v := m.Stats["inactive_file"]; v < m.Usage { // cgroup v2
		return m.Usage - v
	}
	return m.Usage
}

// nodeContainer finds a node's container ID by the cluster and node labels, so that a container
// that merely has the same name is never touched.
func (d *Docker) nodeContainer(ctx context.Context, cluster, node string) (string, error) {
	f := clusterFilter(cluster).Add("label", LabelNodeName+"="+node)
	cs, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return "", fmt.Errorf("find node %s of cluster %q: %w", node, cluster, err)
	}
	switch len(cs.Items) {
	case 0:
		return "", fmt.Errorf("node %s of cluster %q: %w", node, cluster, ErrNotFound)
	case 1:
		return cs.Items[0].ID, nil
	default:
		return "", fmt.Errorf("node %s of cluster %q: %d containers carry its labels", node, cluster, len(cs.Items))
	}
}
