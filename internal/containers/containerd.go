package containers

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dialTimeout bounds connecting to a containerd socket.
const dialTimeout = 5 * time.Second

// dial connects to the containerd at addr (a unix socket path). A socket
// that is not there is said plainly instead of after gRPC's retries.
// dialNamespace is dial for calls scoped to a containerd namespace, which
// every one of them needs: it returns the client and ctx in namespace.
func dialNamespace(ctx context.Context, addr, namespace string) (*client.Client, context.Context, error) {
	if namespace == "" {
		return nil, ctx, errorf(ErrInvalid, "a containerd namespace is required")
	}

	c, err := dial(addr)
	if err != nil {
		return nil, ctx, err
	}

	return c, namespaces.WithNamespace(ctx, namespace), nil
}

func dial(addr string) (*client.Client, error) {
	if err := checkSocket(addr); err != nil {
		return nil, err
	}

	c, err := client.New(addr, client.WithTimeout(dialTimeout))
	if err != nil {
		return nil, fmt.Errorf("containerd at %s: %w", addr, err)
	}

	return c, nil
}

func checkSocket(addr string) error {
	if _, err := os.Stat(addr); err != nil {
		return errorf(ErrUnavailable, "containerd is not running: no socket at %s", addr)
	}

	return nil
}

// rpcError adds the socket to an error from a call, and says a daemon
// that went away is unavailable (rather than an internal error).
func rpcError(addr, what string, err error) error {
	if errdefs.IsUnavailable(err) || status.Code(err) == codes.Unavailable {
		return errorf(ErrUnavailable, "containerd at %s: %s: %v", addr, what, err)
	}

	return fmt.Errorf("containerd at %s: %s: %w", addr, what, err)
}

// List is what runs in a namespace of the containerd at addr. Containers
// the CRI made are named and grouped by pod from their labels, with the
// CRI's statuses; others are listed only while they have a task (as
// Talos does: a container without one never ran or was cleaned up).
func List(ctx context.Context, addr, namespace string) ([]Container, error) {
	stats, err := list(ctx, addr, namespace, false)
	if err != nil {
		return nil, err
	}

	out := make([]Container, len(stats))
	for i, s := range stats {
		out[i] = s.Container
	}

	return out, nil
}

// Stats is List with each running container's CPU and memory usage.
func Stats(ctx context.Context, addr, namespace string) ([]Stat, error) {
	return list(ctx, addr, namespace, true)
}

func list(ctx context.Context, addr, namespace string, metrics bool) ([]Stat, error) {
	c, ctx, err := dialNamespace(ctx, addr, namespace)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	cs, err := c.Containers(ctx)
	if err != nil {
		return nil, rpcError(addr, "list containers", err)
	}

	names, err := imageNames(ctx, c)
	if err != nil {
		return nil, rpcError(addr, "list images", err)
	}

	var out []Stat

	for _, cntr := range cs {
		s, ok, err := inspect(ctx, cntr, names, metrics)
		if err != nil {
			return nil, rpcError(addr, "container "+cntr.ID(), err)
		}

		if ok {
			s.Namespace = namespace
			out = append(out, s)
		}
	}

	sortStats(out)

	return out, nil
}

// sortStats orders stats as Sort orders containers.
func sortStats(ss []Stat) {
	slices.SortStableFunc(ss, func(a, b Stat) int { return compareContainers(a.Container, b.Container) })
}

// inspect describes one container; ok is false when it is not listed
// (gone meanwhile, or a non-CRI container without a task).
func inspect(ctx context.Context, cntr client.Container, names map[string]string, withMetrics bool) (Stat, bool, error) {
	info, err := cntr.Info(ctx, client.WithoutRefreshedMetadata)
	if errdefs.IsNotFound(err) {
		return Stat{}, false, nil
	}

	if err != nil {
		return Stat{}, false, err
	}

	s := Stat{Container: Container{
		ID:        info.ID,
		Display:   info.ID,
		PodID:     info.ID,
		Name:      info.ID,
		Image:     imageName(info.Image, names),
		CreatedAt: info.CreatedAt,
	}}

	podID, display, sandbox, cri := criIdentity(info.Labels)
	if cri {
		s.Display, s.PodID, s.Sandbox = display, podID, sandbox
		s.UID = info.Labels[labelPodUID]

		if n := info.Labels[labelContainerName]; n != "" && !sandbox {
			s.Name = n
		}
	}

	task, err := cntr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		if !cri {
			return Stat{}, false, nil
		}

		s.Status = criStatus(sandbox, "")

		return s, true, nil
	}

	if err != nil {
		return Stat{}, false, err
	}

	st, err := task.Status(ctx)
	if errdefs.IsNotFound(err) {
		// The task ended between the two calls.
		st.Status = client.Stopped
	} else if err != nil {
		return Stat{}, false, err
	}

	s.PID = task.Pid()

	if cri {
		s.Status = criStatus(sandbox, st.Status)
	} else {
		s.Status = taskStatus(st.Status)
	}

	if withMetrics && st.Status == client.Running {
		if err := taskMetrics(ctx, task, &s); err != nil {
			return Stat{}, false, err
		}
	}

	return s, true, nil
}

// taskStatus is how talosctl shows a task's state: upper-cased.
func taskStatus(st client.ProcessStatus) string {
	if st == "" {
		return statusUnknown
	}

	return strings.ToUpper(string(st))
}

// criStatus maps a task's state ("" for no task) to the CRI's names, as
// the CRI itself would report them: a sandbox is ready while its pause
// process runs; a container without a task has exited (the CRI deletes
// the task once the exit is recorded).
func criStatus(sandbox bool, st client.ProcessStatus) string {
	if sandbox {
		if st == client.Running || st == client.Paused || st == client.Pausing {
			return StatusSandboxReady
		}

		return StatusSandboxNotReady
	}

	switch st {
	case client.Running, client.Paused, client.Pausing:
		return StatusContainerRunning
	case client.Created:
		return StatusContainerCreated
	case client.Stopped, "":
		return StatusContainerExited
	default:
		return StatusContainerUnknown
	}
}

// taskMetrics fills in the usage from the task's cgroup.
func taskMetrics(ctx context.Context, task client.Task, s *Stat) error {
	m, err := task.Metrics(ctx)
	if errdefs.IsNotFound(err) {
		return nil // exited meanwhile
	}

	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}

	data, err := typeurl.UnmarshalAny(m.Data)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}

	switch d := data.(type) {
	case *v2.Metrics:
		if d.Memory != nil {
			s.MemoryUsage = d.Memory.Usage
		}

		if d.CPU != nil {
			s.CPUUsage = d.CPU.UsageUsec * uint64(time.Microsecond)
		}
	case *v1.Metrics:
		// The working set, as the kubelet counts it: usage less the
		// inactive page cache.
		if mem := d.Memory; mem != nil && mem.Usage != nil && mem.TotalInactiveFile < mem.Usage.Usage {
			s.MemoryUsage = mem.Usage.Usage - mem.TotalInactiveFile
		}

		if d.CPU != nil && d.CPU.Usage != nil {
			s.CPUUsage = d.CPU.Usage.Total
		}
	default:
		return fmt.Errorf("metrics: unexpected type %T", data)
	}

	return nil
}

// imageNames maps the names of the namespace's images to a readable name
// of the same image: the CRI names a container's image by its ID (the
// config digest) and stores that as an alias of the tagged name.
func imageNames(ctx context.Context, c *client.Client) (map[string]string, error) {
	imgs, err := c.ImageService().List(ctx)
	if err != nil {
		return nil, err
	}

	byTarget := map[string]string{}

	for _, img := range imgs {
		if isDigestName(img.Name) {
			continue
		}

		d := img.Target.Digest.String()
		if prev, ok := byTarget[d]; !ok || better(img.Name, prev) {
			byTarget[d] = img.Name
		}
	}

	names := make(map[string]string, len(imgs))

	for _, img := range imgs {
		if n, ok := byTarget[img.Target.Digest.String()]; ok {
			names[img.Name] = n
		}
	}

	return names, nil
}

// better prefers a tagged name to a digested one, then the shorter.
func better(a, b string) bool {
	if strings.Contains(a, "@") != strings.Contains(b, "@") {
		return !strings.Contains(a, "@")
	}

	return len(a) < len(b) || (len(a) == len(b) && a < b)
}

// isDigestName reports a name that is only a digest ("sha256:...").
func isDigestName(name string) bool {
	algo, _, ok := strings.Cut(name, ":")
	return ok && !strings.ContainsAny(algo, "/.") && (algo == "sha256" || algo == "sha512")
}

// imageName is the readable name for an image name or ID.
func imageName(name string, names map[string]string) string {
	if n, ok := names[name]; ok {
		return n
	}

	return name
}
