package mgmt

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/talosbox/talosbox/internal/cluster/timeline"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/provision"
	"github.com/talosbox/talosbox/internal/version"
)

// cluster create's Docker provisioner: one privileged container per node
// on a bridge network of the cluster's own.

// runDocker makes the nodes as containers from the node image, publishes
// the first control plane's API on this host and waits for the cluster.
func (f *clusterCreateFlags) runDocker(ctx context.Context, out io.Writer, st *stageTimer, tcPath string, cidr netip.Prefix, nodes []nodePlan, gen *generated, res map[string]nodeResources) error {
	d, err := provision.New(ctx, provision.Options{})
	if err != nil {
		return err
	}
	defer d.Close() //nolint:errcheck // nothing to do about it

	image, err := f.ensureImage(ctx, d, out)
	if err != nil {
		return err
	}

	st.done("image")

	if f.wireguard.IsValid() {
		warnNoWireGuard(out)
	}

	privileged, err := d.PrivilegedAllowed(ctx, image)
	if err != nil {
		return err
	}

	if !privileged {
		fmt.Fprintln(out, "the engine refuses privileged containers: nodes get every capability it grants instead, with seccomp and AppArmor unconfined")
	}

	req := provision.ClusterRequest{Name: f.name, Image: image, Network: provision.NetworkRequest{CIDR: cidr}}

	for i, n := range nodes {
		nr := provision.NodeRequest{
			Name:       n.name,
			Type:       n.typ,
			IP:         n.ip,
			NanoCPUs:   res[n.typ].nanoCPUs,
			Memory:     res[n.typ].memory,
			Privileges: nodePrivileges(privileged),
			Files:      []provision.File{{Path: nodeConfigPath, Mode: 0o600, Content: n.config}},
			Volumes:    nodeVolumes,
		}

		if f.cacheDir != "" {
			nr.Binds = append(nr.Binds, provision.Bind{Source: f.cacheDir, Target: images.CacheDir})
		}

		// kube-proxy and flannel mount /lib/modules (hostPath); a node
		// shares its host's kernel, so it gets the host's modules, as
		// kind's nodes do, read-only.
		if st, err := os.Stat(hostModules); err == nil && st.IsDir() {
			nr.Binds = append(nr.Binds, provision.Bind{Source: hostModules, Target: hostModules})
		}

		if i == 0 {
			port, err := apiHostPort(f.apiPort)
			if err != nil {
				return err
			}

			nr.Ports = []provision.PortMapping{{ContainerPort: constants.ApidPort, HostIP: netip.AddrFrom4([4]byte{127, 0, 0, 1}), HostPort: port}}
		}

		req.Nodes = append(req.Nodes, nr)
	}

	fmt.Fprintf(out, "creating network %s (%s)\n", f.name, cidr)

	cluster, err := d.Create(ctx, req, func(ev provision.Event) {
		if ev.Stage == provision.StageContainerStarted {
			st.tl.Add(timeline.Entry{At: time.Now(), Node: ev.Object, What: "container started"})
		}

		switch ev.Stage {
		case provision.StageContainerStarted, provision.StageRollback, provision.StageNetworkCreated:
			fmt.Fprintf(out, "%s\n", ev)
		}
	})
	if err != nil {
		return fmt.Errorf("create cluster %q: %w", f.name, err)
	}

	st.done("containers")

	endpoint, err := publishedAPI(cluster)
	if err != nil {
		return err
	}

	if f.forced != nil {
		endpoint = f.forced.Talos
	}

	if err := mergeClusterContext(tcPath, f.name, gen.talosconfig, []string{endpoint}, nodes[0].ip.String(), out); err != nil {
		return err
	}

	if !f.wait {
		fmt.Fprintf(out, "cluster %q created in %s\n", f.name, st.summary())
		return nil
	}

	if err := waitClusterHealthy(ctx, out, st.tl, gen.talosconfig, []string{endpoint}, nodes, !f.skipBootstrap, f.kubeServer(), f.waitTimeout); err != nil {
		return fmt.Errorf("%w\nthe cluster is left running: inspect it with talosctl, or remove it with 'talosctl cluster destroy --name %s'", err, f.name)
	}

	st.done("health")
	f.healthy(out, st)

	return nil
}

const hostModules = "/lib/modules"

// nodeConfigPath is where a node container finds its config on first
// start: the persisted config in the state volume, so that secrets never
// appear in the container's environment (docker inspect).
const nodeConfigPath = "/var/lib/talosbox/state/config.yaml"

// nodeVolumes are where a Docker node writes besides its state and tmpfs,
// as Talos's Docker nodes have them: containerd's images and the
// kubelet's pods under /var, CNI configs and plugins, the kubelet's
// configs. They are volumes because overlay snapshots cannot sit on the
// container's own overlay root, and pods' data does not belong in memory.
var nodeVolumes = []string{"/var", "/etc/cni", "/etc/kubernetes", "/opt", "/usr/libexec/kubernetes"}

// nodePrivileges is what a node that runs containers needs, as Talos's
// and kind's Docker nodes are privileged: runc mounts, unshares and sets
// up cgroups, seccomp and AppArmor would refuse what runc and the kubelet
// do, the node mounts its own cgroup hierarchies in a cgroup namespace of
// its own, and the kubelet reads /dev/kmsg. Where the engine refuses
// privileged containers, nodes get every capability but SYS_RESOURCE
// (what such an engine lacks itself; the CRI then restricts
// oom_score_adj). The root filesystem stays read-only: everything a node
// writes is on its volumes or tmpfs.
func nodePrivileges(privileged bool) provision.Privileges {
	pv := provision.Privileges{
		SecurityOpt:     []string{"seccomp=unconfined", "apparmor=unconfined"},
		ReadonlyRootfs:  true,
		CgroupnsPrivate: true,
		Devices:         []string{"/dev/kmsg"},
		Tmpfs: map[string]string{"/tmp": "rw,mode=1777", "/run": "rw,mode=755", "/system": "rw,mode=755",
			// containerd's CRI config is rendered anew on every boot.
			"/etc/cri": "rw,mode=755"},
	}

	if privileged {
		pv.Privileged = true
	} else {
		pv.CapAdd, pv.CapDrop = []string{"ALL"}, []string{"SYS_RESOURCE"}
		// /proc/sys writable, as in a privileged container: the portmap
		// CNI plugin sets route_localnet on the pods' bridge (in the
		// node's own network namespace), and a read-only /proc/sys
		// fails every pod with a hostPort.
		pv.WritableProcSys = true
	}

	return pv
}

type nodeResources struct {
	nanoCPUs int64
	memory   int64
}

func (f *clusterCreateFlags) resources() (map[string]nodeResources, error) {
	parse := func(flag, cpus string, mem int) (nodeResources, error) {
		c, err := strconv.ParseFloat(cpus, 64)
		if err != nil || c <= 0 {
			return nodeResources{}, fmt.Errorf("--%s %q: want a positive number of CPUs such as 2.0", flag, cpus)
		}

		if mem < 64 {
			return nodeResources{}, fmt.Errorf("memory limit %d MiB is too small: a node needs at least 64 MiB", mem)
		}

		return nodeResources{nanoCPUs: int64(c * 1e9), memory: int64(mem) << 20}, nil
	}

	cp, err := parse("cpus", f.cpus, f.memory)
	if err != nil {
		return nil, err
	}

	w, err := parse("cpus-workers", f.cpusWorkers, f.memWorker)
	if err != nil {
		return nil, err
	}

	return map[string]nodeResources{provision.TypeControlPlane: cp, provision.TypeWorker: w}, nil
}

// ensureImage returns the image to run: --image as given (it must exist,
// since nothing is pulled), or talosbox:<version> built from the binary.
func (f *clusterCreateFlags) ensureImage(ctx context.Context, d *provision.Docker, out io.Writer) (string, error) {
	if f.image != "" {
		ok, err := d.ImageExists(ctx, f.image)
		if err != nil {
			return "", err
		}

		if !ok {
			return "", fmt.Errorf("image %q is not in the local image store, and no registry is contacted: build it, or leave out --image to build one from this binary", f.image)
		}

		return f.image, nil
	}

	bin, err := f.nodeBinary()
	if err != nil {
		return "", err
	}

	tag := "talosbox:" + strings.NewReplacer("+", "-").Replace(version.Tag)
	fmt.Fprintf(out, "building image %s from %s\n", tag, bin)

	files, links, err := f.runtimeFiles(bin, out)
	if err != nil {
		return "", err
	}

	err = d.BuildImage(ctx, provision.BuildRequest{
		Tag:       tag,
		Binary:    bin,
		Applets:   []string{"/sbin/init", "talosctl", "/bin/containerd", "/bin/containerd-shim-runc-v2"},
		Files:     files,
		Links:     links,
		OSRelease: version.OSRelease(version.Tag),
		Env:       []string{"TALOSBOX_PLATFORM=container", "TALOSBOX_OWN_ROOT=1"},
	}, io.Discard)
	if err != nil {
		return "", err
	}

	return tag, nil
}

// publishedAPI is the 127.0.0.1:port the first control plane's apid is
// reachable at from this machine.
func publishedAPI(c *provision.Cluster) (string, error) {
	for _, n := range c.Nodes {
		for _, p := range n.Ports {
			if p.ContainerPort == constants.ApidPort && p.HostPort != 0 {
				return netip.AddrPortFrom(p.HostIP, p.HostPort).String(), nil
			}
		}
	}

	return "", fmt.Errorf("cluster %q: no node publishes the API port %d", c.Name, constants.ApidPort)
}

// apiHostPort is the host port of the first control plane's API: the one
// asked for, else a free one picked now. Docker would pick a new random
// port each time the container starts, and the talosconfig endpoint
// would break on a restart; a pinned port keeps it.
func apiHostPort(asked int) (uint16, error) {
	if asked != 0 {
		return uint16(asked), nil
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a host port for the API: %w", err)
	}
	defer l.Close()

	return uint16(l.Addr().(*net.TCPAddr).Port), nil //nolint:forcetypeassert // a TCP listener
}
