package provision

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// stepTimeout bounds each Engine call of Create. Create calls are detached from the caller's
// context (see Create), so this is what keeps a wedged engine from hanging the CLI forever.
const stepTimeout = 2 * time.Minute

// rollbackTimeout bounds the removal of a half-created cluster.
const rollbackTimeout = time.Minute

// Create validates req, checks that nothing in Docker collides with it, then creates the
// network, one state volume per node and the node containers, and starts the containers in
// request order. It reports each step to progress (may be nil) and returns the cluster as
// Show sees it.
//
// Create is all or nothing. On any failure, or when ctx is canceled (Ctrl-C in the CLI), it
// removes everything it created, with a fresh context, and says so in the error. Cancellation
// is honored between Engine calls rather than by aborting one in flight: an aborted request
// may still complete in the daemon, and the rollback would not know about its object.
//
// Nothing is created when the request is invalid (ErrInvalidRequest), the image is missing
// (ErrImageNotFound), a name is taken (ErrNameInUse) or the subnet overlaps another Docker
// network (ErrSubnetOverlap).
func (d *Docker) Create(ctx context.Context, req ClusterRequest, progress func(Event)) (*Cluster, error) {
	req, err := normalize(req)
	if err != nil {
		return nil, err
	}
	if err := d.preflight(ctx, req); err != nil {
		return nil, err
	}

	c := &creation{d: d, ctx: ctx, req: req, id: newCreateID(), r: newReporter(progress)}
	cluster, err := c.run()
	if err == nil {
		return cluster, nil
	}

	c.r.emit(StageRollback, object{Name: req.Name})
	rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	objs := c.created
	if labeled, err := d.findBy(rbCtx, make(client.Filters).Add("label", LabelCreateID+"="+c.id), req.Name); err == nil {
		objs = objs.union(labeled)
	}
	if rbErr := d.teardown(rbCtx, objs, c.r); rbErr != nil {
		return nil, fmt.Errorf("create cluster %q: %w; removing what was created failed too, run destroy for %q: %w",
			req.Name, err, req.Name, rbErr)
	}
	return nil, fmt.Errorf("create cluster %q: %w (everything created was removed)", req.Name, err)
}

// creation is one Create call in progress.
type creation struct {
	d       *Docker
	ctx     context.Context
	req     ClusterRequest
	id      string // LabelCreateID
	r       *reporter
	created objects
}

// step returns the context for the next Engine call, or an error if the caller gave up.
func (c *creation) step() (context.Context, context.CancelFunc, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("interrupted: %w", context.Cause(c.ctx))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), stepTimeout)
	return ctx, cancel, nil
}

func (c *creation) run() (*Cluster, error) {
	if err := c.createNetwork(); err != nil {
		return nil, err
	}
	for i := range c.req.Nodes {
		if err := c.createVolume(&c.req.Nodes[i]); err != nil {
			return nil, err
		}
	}
	for i := range c.req.Nodes {
		if err := c.createNode(&c.req.Nodes[i]); err != nil {
			return nil, err
		}
	}

	ctx, cancel, err := c.step()
	if err != nil {
		return nil, err
	}
	defer cancel()
	return c.d.Show(ctx, c.req.Name)
}

func (c *creation) createNetwork() error {
	ctx, cancel, err := c.step()
	if err != nil {
		return err
	}
	defer cancel()

	opts := client.NetworkCreateOptions{
		Driver: "bridge",
		IPAM: &network.IPAM{
			Driver: "default",
			Config: []network.IPAMConfig{{Subnet: c.req.Network.CIDR, Gateway: c.req.Network.Gateway}},
		},
		Labels: clusterLabels(c.req, c.id, nil),
	}
	if c.req.Network.MTU != 0 {
		opts.Options = map[string]string{"com.docker.network.driver.mtu": strconv.Itoa(c.req.Network.MTU)}
	}
	res, err := c.d.api.NetworkCreate(ctx, c.req.Name, opts)
	if err != nil {
		return fmt.Errorf("create network %s (%s): %w", c.req.Name, c.req.Network.CIDR, err)
	}
	obj := object{ID: res.ID, Name: c.req.Name}
	c.created.networks = append(c.created.networks, obj)

	// Engines before API 1.44 accept duplicate network names, so a concurrent create of the
	// same cluster could pass preflight too; detect it now that ours exists.
	same, err := c.d.api.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("name", c.req.Name)})
	if err != nil {
		return fmt.Errorf("list networks named %s: %w", c.req.Name, err)
	}
	for _, n := range same.Items {
		if n.Name == c.req.Name && n.ID != res.ID {
			return fmt.Errorf("%w: another network named %s (%.12s) appeared while creating ours", ErrNameInUse, n.Name, n.ID)
		}
	}
	c.r.emit(StageNetworkCreated, obj)
	return nil
}

func (c *creation) createVolume(n *NodeRequest) error {
	ctx, cancel, err := c.step()
	if err != nil {
		return err
	}
	defer cancel()

	name := volumeName(c.req.Name, n.Name)
	if _, err := c.d.api.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name:   name,
		Driver: "local",
		Labels: clusterLabels(c.req, c.id, n),
	}); err != nil {
		return fmt.Errorf("create volume %s: %w", name, err)
	}
	obj := object{ID: name, Name: name, Node: n.Name}
	c.created.volumes = append(c.created.volumes, obj)
	c.r.emit(StageVolumeCreated, obj)
	return nil
}

func (c *creation) createNode(n *NodeRequest) error {
	ctx, cancel, err := c.step()
	if err != nil {
		return err
	}
	defer cancel()

	opts, err := containerOptions(c.req, n, clusterLabels(c.req, c.id, n))
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	res, err := c.d.api.ContainerCreate(ctx, opts)
	if err != nil {
		return fmt.Errorf("create container %s: %w", n.Name, err)
	}
	obj := object{ID: res.ID, Name: n.Name, Node: n.Name}
	c.created.containers = append(c.created.containers, obj)
	if err := c.d.copyFiles(ctx, res.ID, n.Files); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	c.r.emit(StageContainerCreated, obj)

	// Checked again: creating is quick, starting may not be, and an interrupt in between
	// should not start a node only to remove it.
	startCtx, cancelStart, err := c.step()
	if err != nil {
		return err
	}
	defer cancelStart()
	if _, err := c.d.api.ContainerStart(startCtx, res.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", n.Name, err)
	}
	c.r.emit(StageContainerStarted, obj)
	return nil
}

// newCreateID returns a random LabelCreateID value.
func newCreateID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// volumeName is the name of a node's state volume: <cluster>-<node>-state, without repeating
// the cluster name when the node name already starts with it (talos-default-worker-1-state).
func volumeName(cluster, node string) string {
	if strings.HasPrefix(node, cluster+"-") {
		return node + "-state"
	}
	return cluster + "-" + node + "-state"
}

// containerOptions translates a node request into the Engine's container configuration.
func containerOptions(req ClusterRequest, n *NodeRequest, labels map[string]string) (client.ContainerCreateOptions, error) {
	exposed := network.PortSet{}
	bindings := network.PortMap{}
	for _, p := range n.Ports {
		port, ok := network.PortFrom(p.ContainerPort, network.IPProtocol(p.Proto))
		if !ok {
			return client.ContainerCreateOptions{}, fmt.Errorf("port %s: invalid", p)
		}
		exposed[port] = struct{}{}
		hostPort := ""
		if p.HostPort != 0 {
			hostPort = strconv.Itoa(int(p.HostPort))
		}
		bindings[port] = append(bindings[port], network.PortBinding{HostIP: p.HostIP, HostPort: hostPort})
	}

	var devices []container.DeviceMapping
	for _, s := range n.Privileges.Devices {
		dev, err := parseDevice(s)
		if err != nil {
			return client.ContainerCreateOptions{}, err
		}
		devices = append(devices, container.DeviceMapping{PathOnHost: dev.host, PathInContainer: dev.container, CgroupPermissions: dev.perms})
	}

	mounts := []mount.Mount{{
		Type:   mount.TypeVolume,
		Source: volumeName(req.Name, n.Name),
		Target: StateDir,
	}}
	for _, v := range n.Volumes {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Target: v})
	}
	for _, b := range n.Binds {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: b.Source, Target: b.Target, ReadOnly: true})
	}

	noInit := false // our binary is PID 1 and reaps its own children
	pv := n.Privileges
	return client.ContainerCreateOptions{
		Name: n.Name,
		Config: &container.Config{
			Hostname:     n.Name,
			Image:        req.Image,
			Env:          n.Env,
			Cmd:          n.Cmd,
			Labels:       labels,
			ExposedPorts: exposed,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:   container.NetworkMode(req.Name),
			PortBindings:  bindings,
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
			Init:          &noInit,
			Resources: container.Resources{
				NanoCPUs: n.NanoCPUs,
				Memory:   n.Memory,
				Devices:  devices,
			},
			Mounts:         mounts,
			CapAdd:         pv.CapAdd,
			CapDrop:        pv.CapDrop,
			SecurityOpt:    pv.SecurityOpt,
			Sysctls:        pv.Sysctls,
			Tmpfs:          pv.Tmpfs,
			ReadonlyRootfs: pv.ReadonlyRootfs,
			Privileged:     pv.Privileged,
			CgroupnsMode:   cgroupns(pv.CgroupnsPrivate),
			ReadonlyPaths:  readonlyPaths(pv),
		},
		NetworkingConfig: &network.NetworkingConfig{
			EndpointsConfig: map[string]*network.EndpointSettings{
				req.Name: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: n.IP}},
			},
		},
	}, nil
}

func cgroupns(private bool) container.CgroupnsMode {
	if private {
		return container.CgroupnsModePrivate
	}

	return ""
}

// copyFiles writes files into a created container. Files under StateDir are copied into the
// state volume's mount point: the Engine refuses to copy into a read-only root filesystem, but
// not into a writable volume inside it.
func (d *Docker) copyFiles(ctx context.Context, id string, files []File) error {
	groups := map[string][]File{}
	for _, f := range files {
		base := "/"
		if strings.HasPrefix(f.Path, StateDir+"/") {
			base = StateDir
		}
		groups[base] = append(groups[base], f)
	}
	for base, fs := range groups {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, f := range fs {
			// Missing parent directories are created by the Engine (0755, root).
			name := strings.TrimPrefix(strings.TrimPrefix(f.Path, base), "/")
			if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: f.Mode, Size: int64(len(f.Content)), ModTime: epoch}); err != nil {
				return fmt.Errorf("file %s: %w", f.Path, err)
			}
			if _, err := tw.Write(f.Content); err != nil {
				return fmt.Errorf("file %s: %w", f.Path, err)
			}
		}
		if err := tw.Close(); err != nil {
			return fmt.Errorf("files: %w", err)
		}
		if _, err := d.api.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: base, Content: &buf}); err != nil {
			return fmt.Errorf("copy files into %s: %w", base, err)
		}
	}
	return nil
}

// dockerReadonlyPaths are the Engine's default read-only paths (moby's
// oci.DefaultSpec); a container that sets its own replaces them all.
var dockerReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// readonlyPaths is nil (the Engine's defaults) unless /proc/sys must be
// writable; then it is the defaults without it.
func readonlyPaths(pv Privileges) []string {
	if !pv.WritableProcSys || pv.Privileged {
		return nil
	}

	return slices.DeleteFunc(slices.Clone(dockerReadonlyPaths), func(p string) bool { return p == "/proc/sys" })
}
