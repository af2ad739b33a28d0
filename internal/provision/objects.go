package provision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// object is one Docker object of a cluster, by ID (or name, for volumes) and display name.
type object struct {
	ID   string
	Name string
	Node string
}

// objects is what a cluster consists of in Docker: what Destroy finds by label and what Create
// records as it goes, so that a rollback removes exactly what this call created.
type objects struct {
	containers []object
	networks   []object
	volumes    []object
}

// union returns o plus the objects of p that o lacks.
func (o objects) union(p objects) objects {
	merge := func(a, b []object) []object {
		out := slices.Clone(a)
		for _, x := range b {
			if !slices.ContainsFunc(out, func(y object) bool { return y.ID == x.ID }) {
				out = append(out, x)
			}
		}
		return out
	}
	return objects{
		containers: merge(o.containers, p.containers),
		networks:   merge(o.networks, p.networks),
		volumes:    merge(o.volumes, p.volumes),
	}
}

func (o *objects) empty() bool {
	return len(o.containers) == 0 && len(o.networks) == 0 && len(o.volumes) == 0
}

// reporter turns stages into Events for a caller's callback. It serializes calls, so that the
// parallel removals of Destroy never call the callback concurrently.
type reporter struct {
	mu    sync.Mutex
	start time.Time
	fn    func(Event)
}

func newReporter(fn func(Event)) *reporter {
	return &reporter{start: time.Now(), fn: fn}
}

func (r *reporter) emit(stage Stage, obj object) {
	if r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fn(Event{Stage: stage, Object: obj.Name, Node: obj.Node, Elapsed: time.Since(r.start)})
}

// clusterLabels are the labels of an object of cluster req made by the Create call createID;
// node-scoped ones when node is set.
func clusterLabels(req ClusterRequest, createID string, node *NodeRequest) map[string]string {
	l := maps.Clone(req.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelCluster] = req.Name
	l[LabelOwned] = "true"
	l[LabelCreateID] = createID
	if node != nil {
		l[LabelNodeName] = node.Name
		l[LabelNodeType] = node.Type
	}
	return l
}

// clusterFilter selects the objects carrying the cluster's label.
func clusterFilter(name string) client.Filters {
	return make(client.Filters).Add("label", LabelCluster+"="+name)
}

// find lists the objects carrying the cluster's label.
func (d *Docker) find(ctx context.Context, name string) (objects, error) {
	return d.findBy(ctx, clusterFilter(name), name)
}

// findBy lists the objects matching filter; name is for messages.
func (d *Docker) findBy(ctx context.Context, filter client.Filters, name string) (objects, error) {
	var o objects
	cs, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return o, fmt.Errorf("list containers of cluster %q: %w", name, err)
	}
	for _, c := range cs.Items {
		o.containers = append(o.containers, object{ID: c.ID, Name: containerName(c.Names), Node: c.Labels[LabelNodeName]})
	}
	ns, err := d.api.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return o, fmt.Errorf("list networks of cluster %q: %w", name, err)
	}
	for _, n := range ns.Items {
		o.networks = append(o.networks, object{ID: n.ID, Name: n.Name})
	}
	vs, err := d.api.VolumeList(ctx, client.VolumeListOptions{Filters: filter})
	if err != nil {
		return o, fmt.Errorf("list volumes of cluster %q: %w", name, err)
	}
	for _, v := range vs.Items {
		o.volumes = append(o.volumes, object{ID: v.Name, Name: v.Name, Node: v.Labels[LabelNodeName]})
	}
	return o, nil
}

// teardown removes objs: the containers first and in parallel (a stop with a short grace
// period, so that PID 1 gets SIGTERM, then a forced removal with their anonymous volumes),
// then the networks, which refuse removal while containers are attached, then the volumes,
// which refuse it while containers use them. Objects already gone are not errors.
func (d *Docker) teardown(ctx context.Context, objs objects, r *reporter) error {
	removeAll := func(list []object, stage Stage, remove func(object) error) error {
		errs := make([]error, len(list))
		var wg sync.WaitGroup
		for i, obj := range list {
			wg.Go(func() {
				if err := remove(obj); err != nil && !isNotFound(err) {
					errs[i] = err
					return
				}
				r.emit(stage, obj)
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}

	err := removeAll(objs.containers, StageContainerRemoved, func(c object) error {
		// A failed stop is not fatal: the forced removal below kills the container anyway.
		_, _ = d.api.ContainerStop(ctx, c.ID, client.ContainerStopOptions{Timeout: stopSeconds(d.stopTimeout)})
		if _, err := d.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			return fmt.Errorf("remove container %s: %w", c.Name, err)
		}
		return nil
	})
	if err != nil {
		// Networks and volumes still in use would fail with less useful errors.
		return err
	}
	if err := removeAll(objs.networks, StageNetworkRemoved, func(n object) error {
		if _, err := d.api.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
			return fmt.Errorf("remove network %s: %w", n.Name, err)
		}
		return nil
	}); err != nil {
		return err
	}
	return removeAll(objs.volumes, StageVolumeRemoved, func(v object) error {
		if _, err := d.api.VolumeRemove(ctx, v.ID, client.VolumeRemoveOptions{}); err != nil {
			return fmt.Errorf("remove volume %s: %w", v.Name, err)
		}
		return nil
	})
}

// containerName is the primary name of a container from a list entry, without Docker's "/".
// Legacy links add names like "/other/alias", which are skipped.
func containerName(names []string) string {
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, "/"); ok && rest != "" && !strings.Contains(rest, "/") {
			return rest
		}
	}
	if len(names) > 0 {
		return strings.TrimPrefix(names[0], "/")
	}
	return ""
}
