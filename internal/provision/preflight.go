package provision

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/moby/moby/client"
)

// preflight checks everything that can be checked before creating anything, so that the common
// mistakes (a name or subnet already taken, an image not built, too many CPUs) leave Docker
// untouched instead of costing a create and a rollback.
func (d *Docker) preflight(ctx context.Context, req ClusterRequest) error {
	ok, err := d.ImageExists(ctx, req.Image)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s (images are never pulled: build it first)", ErrImageNotFound, req.Image)
	}

	info, err := d.api.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fmt.Errorf("engine info: %w", err)
	}
	if ncpu := int64(info.Info.NCPU); ncpu > 0 {
		for _, n := range req.Nodes {
			if n.NanoCPUs > ncpu*1e9 {
				return fmt.Errorf("%w: node %s: %.2f CPUs requested, the engine has %d",
					ErrInvalidRequest, n.Name, float64(n.NanoCPUs)/1e9, ncpu)
			}
		}
	}

	// Names first, so that creating a cluster twice says "exists" rather than "overlaps".
	objs, err := d.find(ctx, req.Name)
	if err != nil {
		return err
	}
	if !objs.empty() {
		return fmt.Errorf("%w: cluster %q already exists (%s); destroy it first", ErrNameInUse, req.Name, describe(objs))
	}

	// One unfiltered network list serves the name check and the subnet check below.
	nets, err := d.api.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return fmt.Errorf("list networks: %w", err)
	}
	for _, n := range nets.Items {
		if n.Name == req.Name {
			return fmt.Errorf("%w: a Docker network named %q already exists", ErrNameInUse, req.Name)
		}
	}

	// Container names are global to the engine; Docker's name filter is a regular expression.
	byName := make(client.Filters)
	want := map[string]bool{}
	for _, n := range req.Nodes {
		byName.Add("name", "^/"+regexp.QuoteMeta(n.Name)+"$")
		want[n.Name] = true
	}
	cs, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: byName})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if name := containerName(c.Names); want[name] {
			return fmt.Errorf("%w: a container named %q already exists (%.12s)", ErrNameInUse, name, c.ID)
		}
	}

	// Docker would silently reuse an existing volume of the same name, with its old state.
	vs, err := d.api.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("name", req.Name)})
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vs.Items {
		for _, n := range req.Nodes {
			if v.Name == volumeName(req.Name, n.Name) {
				return fmt.Errorf("%w: a volume named %q already exists", ErrNameInUse, v.Name)
			}
		}
	}

	// Docker refuses an overlapping pool too, but naming the culprit saves the user a search.
	for _, n := range nets.Items {
		for _, cfg := range n.IPAM.Config {
			if cfg.Subnet.IsValid() && cfg.Subnet.Overlaps(req.Network.CIDR) {
				return fmt.Errorf("%w: %s overlaps %s of Docker network %q; pick another subnet",
					ErrSubnetOverlap, req.Network.CIDR, cfg.Subnet, n.Name)
			}
		}
	}
	return nil
}

// describe summarizes objects for an error message.
func describe(o objects) string {
	var parts []string
	add := func(kind string, list []object) {
		if len(list) == 0 {
			return
		}
		names := make([]string, len(list))
		for i, x := range list {
			names[i] = x.Name
		}
		parts = append(parts, fmt.Sprintf("%s %s", kind, strings.Join(names, ", ")))
	}
	add("containers", o.containers)
	add("networks", o.networks)
	add("volumes", o.volumes)
	return strings.Join(parts, "; ")
}
