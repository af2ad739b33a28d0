// Package containers answers the node API's questions about containers
// and images: what runs in a containerd namespace, what the CRI runs for
// Kubernetes (pods first, then their containers), where a Kubernetes
// container's log file is, which images are stored, and pulling one
// through the registry mirrors machined configured.
//
// Every call dials the containerd socket it is given and closes the
// connection before returning: the API asks rarely, and a connection kept
// open would outlive the daemon across restarts.
package containers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The containerd namespaces Talos uses.
const (
	// SystemNamespace holds the node's own containers.
	SystemNamespace = "system"
	// K8sNamespace holds what the CRI runs for Kubernetes.
	K8sNamespace = "k8s.io"
)

// The labels the CRI puts on the containerd containers it creates.
const (
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	labelKind          = "io.cri-containerd.kind"

	kindSandbox   = "sandbox"
	kindContainer = "container"
)

// The statuses the CRI reports, which talosctl shows as they are.
const (
	StatusSandboxReady     = "SANDBOX_READY"
	StatusSandboxNotReady  = "SANDBOX_NOTREADY"
	StatusContainerCreated = "CONTAINER_CREATED"
	StatusContainerRunning = "CONTAINER_RUNNING"
	StatusContainerExited  = "CONTAINER_EXITED"
	StatusContainerUnknown = "CONTAINER_UNKNOWN"
)

// statusUnknown is a non-CRI container's whose task state is not known.
const statusUnknown = "UNKNOWN"

// ErrNotFound is matched (errors.Is) by the errors for a container, pod
// or image that does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is matched by the errors for a containerd that cannot
// be reached: not started yet, or not running on this node.
var ErrUnavailable = errors.New("unavailable")

// ErrInvalid is matched by the errors for a malformed argument.
var ErrInvalid = errors.New("invalid argument")

// kindError is an error with its own message that also matches one of
// the sentinels above, so callers can map it to a status code without
// the sentinel's text being appended to the message.
type kindError struct {
	kind  error
	msg   string
	cause error
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }
func (e *kindError) Unwrap() error        { return e.cause }

func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Container is one row of `talosctl containers`.
type Container struct {
	// Namespace is the containerd namespace it lives in.
	Namespace string
	// ID is the runtime's own ID (the containerd container ID).
	ID string
	// Display is what talosctl shows and `logs` takes: the ID, or for
	// Kubernetes "<ns>/<pod>" (the pod's sandbox) and
	// "<ns>/<pod>:<container>".
	Display string
	// PodID is the Display of the pod's sandbox; it equals Display for a
	// sandbox and for a container outside Kubernetes.
	PodID string
	// Name is the Kubernetes container name, or the ID.
	Name string
	// UID is the pod's UID, for Kubernetes.
	UID   string
	Image string
	PID   uint32
	// Status is the CRI's (SANDBOX_READY, CONTAINER_RUNNING, ...) for
	// Kubernetes, else the task's state upper-cased (RUNNING, STOPPED).
	Status string
	// Sandbox is set on a pod's sandbox (pause) container.
	Sandbox bool
	// NetworkNamespace is the name of a sandbox's network namespace.
	NetworkNamespace string
	// Attempt counts the container's restarts (the CRI's attempt).
	Attempt   uint32
	CreatedAt time.Time
}

// Stat is a container's resource usage, for `talosctl stats`.
type Stat struct {
	Container
	// MemoryUsage is in bytes: the working set for the CRI, the cgroup's
	// usage otherwise.
	MemoryUsage uint64
	// CPUUsage is the cumulative CPU time in nanoseconds.
	CPUUsage uint64
}

// Image is one stored image.
type Image struct {
	Name   string
	Digest string
	// Size is what the image takes for this node's platform: its
	// manifest, config and layers (compressed).
	Size      int64
	CreatedAt time.Time
}

// Sort orders containers as talosctl lists them: by pod, each pod's
// sandbox before its containers, containers by name and then newest
// first. Sorting by the display ID alone (as Talos does) would put
// "ns/pod-2" between "ns/pod" and "ns/pod:c", as '-' sorts before ':'.
func Sort(cs []Container) {
	slices.SortStableFunc(cs, compareContainers)
}

func compareContainers(a, b Container) int {
	return cmp.Or(
		strings.Compare(a.PodID, b.PodID),
		compareBool(b.Sandbox, a.Sandbox),
		strings.Compare(a.Display, b.Display),
		b.CreatedAt.Compare(a.CreatedAt),
		strings.Compare(a.ID, b.ID),
	)
}

// compareBool puts false first.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	default:
		return 1
	}
}

// Ref names a Kubernetes container (or pod) as talosctl does.
type Ref struct {
	Namespace string
	Pod       string
	// Container is empty for the pod itself (its sandbox).
	Container string
	// IDPrefix, when given (Talos's newer "<ns>/<pod>:<container>:<id>"),
	// picks one of several containers of the same name by the start of
	// its runtime ID.
	IDPrefix string
}

// String is the display form of r.
func (r Ref) String() string {
	s := r.Namespace + "/" + r.Pod
	if r.Container != "" {
		s += ":" + r.Container
	}

	if r.IDPrefix != "" {
		s += ":" + r.IDPrefix
	}

	return s
}

// ParseRef parses "<ns>/<pod>[:<container>[:<id prefix>]]". Kubernetes
// names never hold '/' or ':', so the separators are unambiguous.
func ParseRef(s string) (Ref, error) {
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" {
		return Ref{}, errorf(ErrInvalid, "container %q: want <namespace>/<pod>:<container>", s)
	}

	parts := strings.Split(rest, ":")
	if len(parts) > 3 || slices.Contains(parts, "") || strings.Contains(rest, "/") {
		return Ref{}, errorf(ErrInvalid, "container %q: want <namespace>/<pod>:<container>", s)
	}

	r := Ref{Namespace: ns, Pod: parts[0]}

	if len(parts) > 1 {
		r.Container = parts[1]
	}

	if len(parts) > 2 {
		r.IDPrefix = parts[2]
	}

	return r, nil
}

// criIdentity names a CRI-made container from its labels: the pod's
// display ID and its own, and whether it is the sandbox. ok is false for
// containers the CRI did not make.
func criIdentity(labels map[string]string) (podID, display string, sandbox, ok bool) {
	ns, pod := labels[labelPodNamespace], labels[labelPodName]
	if ns == "" || pod == "" {
		return "", "", false, false
	}

	podID = ns + "/" + pod

	if labels[labelKind] == kindSandbox {
		return podID, podID, true, true
	}

	name := labels[labelContainerName]
	if name == "" {
		// Only sandboxes lack a container name; without the kind label
		// (older CRI) that is how they are told apart.
		return podID, podID, true, true
	}

	return podID, podID + ":" + name, false, true
}
