package provision

import (
	"fmt"
	"net/netip"
	"time"
)

// ClusterRequest describes a cluster to create: one bridge network, and per node a container
// and a named state volume.
type ClusterRequest struct {
	// Name names the cluster and its network; Docker's syntax [a-zA-Z0-9][a-zA-Z0-9_.-]*.
	Name string
	// Image is the node image, which must already be in the local image store.
	Image string
	// Network is the cluster's bridge network.
	Network NetworkRequest
	// Nodes are created and started in this order.
	Nodes []NodeRequest
	// Labels are extra labels put on every object, next to the talosbox.* ones.
	Labels map[string]string
}

// NetworkRequest describes the cluster's bridge network.
type NetworkRequest struct {
	// CIDR is the IPv4 subnet, e.g. 10.5.0.0/24; it must not overlap another Docker network.
	CIDR netip.Prefix
	// Gateway is the host's address on the bridge; the zero value means the first host address.
	Gateway netip.Addr
	// MTU of the bridge; 0 means Docker's default.
	MTU int
}

// NodeRequest describes one node container.
type NodeRequest struct {
	// Name is the container name and the hostname: lowercase letters, digits, '-' and '.',
	// at most 63 characters (a Kubernetes node name must be one). Container names are global
	// to the engine, so include the cluster name (e.g. "talos-default-controlplane-1").
	Name string
	// Type is TypeControlPlane or TypeWorker.
	Type string
	// IP is the node's static address inside the network's CIDR.
	IP netip.Addr
	// Env are extra KEY=VALUE pairs for PID 1.
	Env []string
	// Cmd replaces the image's default arguments when non-nil.
	Cmd []string
	// NanoCPUs limits CPU in units of 1e-9 CPUs; 0 means unlimited.
	NanoCPUs int64
	// Memory limits memory in bytes; 0 means unlimited.
	Memory int64
	// Ports are published on the host.
	Ports []PortMapping
	// Files are written into the container after it is created and before it starts, e.g. a
	// machine config under StateDir. Parent directories are created as needed.
	Files []File
	// Privileges are the security settings of the container.
	Privileges Privileges
	// Volumes are anonymous volumes at these paths, removed with the
	// container: the writable directories of a read-only root that must
	// not be tmpfs (containerd's overlay snapshots, the kubelet's pods),
	// initialised from the image's content as Docker does.
	Volumes []string
	// Binds are host directories mounted read-only, e.g. the image cache
	// the node serves as its registry mirror.
	Binds []Bind
}

// Bind mounts a host path into a node read-only.
type Bind struct {
	Source, Target string
}

// PortMapping publishes a container port on the host.
type PortMapping struct {
	ContainerPort uint16
	// Proto is "tcp" (the default when empty), "udp" or "sctp".
	Proto string
	// HostIP defaults to 127.0.0.1, so that a node API is not exposed beyond this machine.
	HostIP netip.Addr
	// HostPort 0 means a random free port; Show reports the one Docker picked.
	HostPort uint16
}

// String formats the mapping like docker ps: 127.0.0.1:50000->50000/tcp.
func (p PortMapping) String() string {
	host := ""
	if p.HostIP.IsValid() {
		host = netip.AddrPortFrom(p.HostIP, p.HostPort).String()
	} else {
		host = fmt.Sprint(p.HostPort)
	}
	return fmt.Sprintf("%s->%d/%s", host, p.ContainerPort, protoOrTCP(p.Proto))
}

// File is a file written into a node container before it starts.
type File struct {
	// Path is absolute. Files under StateDir land in the node's state volume; elsewhere they
	// need a writable root filesystem (Privileges.ReadonlyRootfs false), as the Engine refuses
	// to copy into a read-only one.
	Path string
	// Mode defaults to 0600.
	Mode    int64
	Content []byte
}

// Privileges are the container's security settings; the zero value is Docker's default
// (unprivileged) container.
type Privileges struct {
	CapAdd      []string
	CapDrop     []string
	SecurityOpt []string // e.g. "seccomp=unconfined", "apparmor=unconfined"
	Sysctls     map[string]string
	// Tmpfs maps a mount point to its options, e.g. "/run": "rw,mode=755".
	Tmpfs          map[string]string
	ReadonlyRootfs bool
	Privileged     bool
	// WritableProcSys leaves /proc/sys out of Docker's read-only paths
	// (the others stay read-only, the masked ones masked), as a
	// privileged container has it: the network sysctls are the
	// container's own network namespace's.
	WritableProcSys bool
	// CgroupnsPrivate gives the container a cgroup namespace of its own, so
	// that the cgroup hierarchies it mounts are its own subtree (runc in a
	// node needs them writable).
	CgroupnsPrivate bool
	// Devices are "host[:container[:permissions]]", e.g. "/dev/net/tun".
	Devices []string
}

// Cluster is a cluster as found in Docker, reconstructed from labels and inspection.
type Cluster struct {
	Name    string
	Network Network
	// Nodes are sorted control planes first, then by name (numbers in names compare as numbers).
	Nodes []Node
}

// Network is the cluster's bridge network.
type Network struct {
	Name    string
	ID      string
	CIDR    netip.Prefix
	Gateway netip.Addr
	MTU     int
}

// Node is one node container.
type Node struct {
	Name        string
	Type        string
	IP          netip.Addr
	Image       string
	NanoCPUs    int64
	Memory      int64
	ContainerID string
	// State is Docker's container state: "running", "exited", "created", ...
	State string
	// Ports are the published ports; HostPort is the one in use while the container runs, and
	// the requested one (0 for random) while it is stopped.
	Ports []PortMapping
}

// Stage is a step reported by Create and Destroy.
type Stage string

// Stages, in the order Create reports them; the removal stages are reported by Destroy and by
// Create when it rolls back.
const (
	StageNetworkCreated   Stage = "network created"
	StageVolumeCreated    Stage = "volume created"
	StageContainerCreated Stage = "container created"
	StageContainerStarted Stage = "container started"
	StageRollback         Stage = "rolling back"
	StageContainerRemoved Stage = "container removed"
	StageNetworkRemoved   Stage = "network removed"
	StageVolumeRemoved    Stage = "volume removed"
)

// Event is one progress report. Callbacks are never called concurrently.
type Event struct {
	Stage Stage
	// Object is the network, volume or container name.
	Object string
	// Node is the node the object belongs to, if any.
	Node string
	// Elapsed is the time since the operation started.
	Elapsed time.Duration
}

// String is a line for the CLI, e.g. "container started: demo-controlplane-1 (1.2s)".
func (e Event) String() string {
	if e.Object == "" {
		return fmt.Sprintf("%s (%s)", e.Stage, e.Elapsed.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %s (%s)", e.Stage, e.Object, e.Elapsed.Round(time.Millisecond))
}

// Stats is a one-shot resource sample of a node.
type Stats struct {
	// Memory is the usage without the page cache, as `docker stats` shows it.
	Memory uint64
	// MemoryLimit is the cgroup limit, or the host's memory when unlimited.
	MemoryLimit uint64
}

func protoOrTCP(p string) string {
	if p == "" {
		return "tcp"
	}
	return p
}
