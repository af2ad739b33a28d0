// Package taskrunner runs a service as a containerd task, the way Talos's
// containerd runner runs the kubelet: the image is pulled if missing, a
// fresh container is made from its rootfs for every run, the task's
// output goes to the service log, and stopping sends SIGTERM, then
// SIGKILL after a grace period. Nothing is left in containerd once a run
// is over, and whatever an earlier crash left is removed first.
package taskrunner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/talosbox/talosbox/internal/supervisor"
)

// DefaultStopTimeout is the time between SIGTERM and SIGKILL when
// Options.StopTimeout is zero (Talos's default).
const DefaultStopTimeout = 10 * time.Second

const (
	// dialTimeout bounds connecting to containerd.
	dialTimeout = 5 * time.Second
	// killTimeout bounds the wait for a task after SIGKILL: it cannot
	// refuse to die, so only a wedged shim or kernel takes this long.
	killTimeout = 30 * time.Second
	// cleanupTimeout bounds deleting the task, container and snapshot
	// once the run is over, so a hung containerd cannot hold up a stop.
	cleanupTimeout = 30 * time.Second
	// drainTimeout bounds copying the output left in the task's pipes
	// once it has exited.
	drainTimeout = 5 * time.Second
)

// Options describe the task.
type Options struct {
	// Socket is the containerd address (the CRI instance's socket).
	Socket string
	// Namespace is the containerd namespace ("system" for the kubelet).
	Namespace string
	// ID names the container, its task and its rootfs snapshot.
	ID string
	// Image is the image reference; it is pulled when missing.
	Image string
	// HostsDir is the registry hosts tree pulls resolve through, so
	// registry mirrors apply (see containers.Pull).
	HostsDir string
	// Args replace the image's entrypoint and command when not empty.
	Args []string
	// Env is added to the image's environment, replacing same-named
	// variables.
	Env []string
	// Mounts are added to the spec's default mounts, replacing those with
	// the same destination.
	Mounts []specs.Mount
	// NoPivotRoot makes runc chroot into the task's root instead of
	// pivot_root(2), which an initramfs root refuses.
	NoPivotRoot bool
	// CgroupsPath is the task's cgroup, e.g. "/podruntime/kubelet".
	CgroupsPath string
	// OOMScoreAdj is the task's OOM score adjustment; zero leaves the
	// default.
	OOMScoreAdj int
	// Privileged gives all capabilities and devices, writable sysfs and
	// cgroupfs, and no masked or read-only paths, AppArmor or seccomp.
	Privileged bool
	// HostNetwork and HostPID share the host's namespaces.
	HostNetwork, HostPID bool
	// RootfsPropagation is the rootfs mount propagation, e.g. "shared".
	RootfsPropagation string
	// StopTimeout is the time between SIGTERM and SIGKILL on stop
	// (DefaultStopTimeout if zero).
	StopTimeout time.Duration
	// FIFODir holds the FIFOs the task's output comes through; empty
	// puts them in "fifo" beside the socket, which is containerd's own
	// directory (/run/containerd/fifo, containerd's default, for the CRI
	// instance) and so exists and is writable.
	FIFODir string
}

type runner struct {
	o Options
}

// New returns a runner for the task described by o.
func New(o Options) supervisor.Runner {
	o.Args = slices.Clone(o.Args)
	o.Env = slices.Clone(o.Env)
	o.Mounts = slices.Clone(o.Mounts)
	o.StopTimeout = cmp.Or(o.StopTimeout, DefaultStopTimeout)

	if o.FIFODir == "" {
		o.FIFODir = filepath.Join(filepath.Dir(o.Socket), "fifo")
	}

	return &runner{o: o}
}

// ReportsStart tells the supervisor that Run reports Running itself, once
// the task has a PID.
func (*runner) ReportsStart() {}

// String names the runner in restart messages, as Talos does.
func (r *runner) String() string {
	return fmt.Sprintf("Containerd(%q)", r.o.ID)
}

func (r *runner) validate() error {
	for _, f := range []struct{ name, v string }{
		{"socket", r.o.Socket}, {"namespace", r.o.Namespace}, {"ID", r.o.ID}, {"image", r.o.Image},
	} {
		if f.v == "" {
			return fmt.Errorf("%s: no %s given", r, f.name)
		}
	}

	return nil
}

// Run runs the task until it exits or ctx is cancelled. A stop through
// ctx returns nil, as does a clean exit; a failed exit returns its
// status.
func (r *runner) Run(ctx context.Context, log io.Writer) (err error) {
	if ctx.Err() != nil {
		return nil
	}

	if err := r.validate(); err != nil {
		return err
	}

	// A missing socket is said plainly, not after gRPC's dial timeout.
	if _, err := os.Stat(r.o.Socket); err != nil {
		return fmt.Errorf("containerd is not running: no socket at %s", r.o.Socket)
	}

	c, err := client.New(r.o.Socket, client.WithTimeout(dialTimeout), client.WithDefaultNamespace(r.o.Namespace))
	if err != nil {
		return fmt.Errorf("connecting to containerd at %s: %w", r.o.Socket, err)
	}
	defer c.Close()

	ctx = namespaces.WithNamespace(ctx, r.o.Namespace)
	// Stopping and cleaning up must go on after ctx is cancelled: that
	// is what asks for them.
	bg := context.WithoutCancel(ctx)

	cnt, err := r.create(ctx, bg, c)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while pulling or creating
		}

		return err
	}

	// Set once the task exists: deleting it through this handle, which
	// has its IO, waits for the output to reach the log and removes the
	// FIFOs.
	var task client.Task

	defer func() {
		cleanupErr := cleanup(bg, cnt, task)
		if cleanupErr == nil {
			return
		}

		// The next run removes whatever is left, so a stop still
		// succeeds; the log says what went wrong.
		fmt.Fprintf(log, "%s: %v\n", r, cleanupErr)

		if ctx.Err() == nil {
			err = errors.Join(err, cleanupErr)
		}
	}()

	lw := &lockedWriter{w: log}

	// On bg, as is the container: an RPC cut short by a stop may still
	// have done its work, and this run would not know what to clean up.
	var taskOpts []client.NewTaskOpts
	if r.o.NoPivotRoot {
		taskOpts = append(taskOpts, client.WithNoPivotRoot)
	}

	task, err = cnt.NewTask(bg, cio.NewCreator(cio.WithStreams(nil, lw, lw), cio.WithFIFODir(r.o.FIFODir)), taskOpts...)
	if err != nil {
		return fmt.Errorf("creating task %s: %w", cnt.ID(), err)
	}

	if ctx.Err() != nil {
		return nil // stopped before it started
	}

	return r.runTask(ctx, bg, cnt, task)
}

// create pulls the image if needed, removes leftovers of an earlier run
// and creates the container. Only the pull is cut short by ctx.
func (r *runner) create(ctx, bg context.Context, c *client.Client) (client.Container, error) {
	sn, err := snapshotter(ctx, c)
	if err != nil {
		return nil, err
	}

	img, err := r.image(ctx, c, sn)
	if err != nil {
		return nil, err
	}

	if err := ctx.Err(); err != nil {
		return nil, err // stopped: there is nothing to run
	}

	if err := r.removeStale(bg, c, sn); err != nil {
		return nil, fmt.Errorf("removing what an earlier run of %s left: %w", r.o.ID, err)
	}

	cnt, err := c.NewContainer(bg, r.o.ID,
		client.WithImage(img),
		client.WithSnapshotter(sn),
		client.WithNewSnapshot(r.o.ID, img),
		client.WithNewSpec(r.specOpts(img)...),
	)
	if err != nil {
		return nil, fmt.Errorf("creating container %s: %w", r.o.ID, err)
	}

	return cnt, nil
}

// runTask starts the task and waits for it to exit or be stopped.
func (r *runner) runTask(ctx, bg context.Context, cnt client.Container, task client.Task) error {
	// Waiting starts before the task does, so its exit cannot be missed;
	// on bg, so that a stop does not end the wait.
	waitCtx, cancelWait := context.WithCancel(bg)
	defer cancelWait()

	exited, err := task.Wait(waitCtx)
	if err != nil {
		return fmt.Errorf("waiting for task %s: %w", task.ID(), err)
	}

	// Not on ctx: the task runs, and may have been seen running, before
	// Start returns, and a stop meanwhile must still be a SIGTERM.
	if err := task.Start(bg); err != nil {
		return fmt.Errorf("starting task %s: %w", task.ID(), err)
	}

	supervisor.Report(ctx, supervisor.Running,
		fmt.Sprintf("Started task %s (PID %d) for container %s", task.ID(), task.Pid(), cnt.ID()))

	select {
	case st := <-exited:
		if ctx.Err() != nil {
			return nil // exited as it was being stopped
		}

		return exitError(task, st)
	case <-ctx.Done():
	}

	return r.stop(ctx, bg, task, cnt, exited)
}

// exitError is nil for a clean exit and says how the task ended
// otherwise.
func exitError(task client.Task, st client.ExitStatus) error {
	code, _, err := st.Result()
	if err != nil {
		return fmt.Errorf("waiting for task %s: %w", task.ID(), err)
	}

	if code != 0 {
		return fmt.Errorf("task %s exited with status %d", task.ID(), code)
	}

	return nil
}

// stop sends SIGTERM to the task's processes, and SIGKILL if they are
// still there after StopTimeout. All of them: with the host's PID
// namespace the main process's children do not die with it.
func (r *runner) stop(ctx, bg context.Context, task client.Task, cnt client.Container, exited <-chan client.ExitStatus) error {
	supervisor.Report(ctx, supervisor.Stopping,
		fmt.Sprintf("Sending SIGTERM to task %s (PID %d, container %s)", task.ID(), task.Pid(), cnt.ID()))

	if err := task.Kill(bg, syscall.SIGTERM, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("sending SIGTERM to task %s: %w", task.ID(), err)
	}

	grace := time.NewTimer(r.o.StopTimeout)
	defer grace.Stop()

	select {
	case <-exited:
		return nil
	case <-grace.C:
	}

	supervisor.Report(ctx, supervisor.Stopping,
		fmt.Sprintf("Sending SIGKILL to task %s (PID %d, container %s)", task.ID(), task.Pid(), cnt.ID()))

	if err := task.Kill(bg, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("sending SIGKILL to task %s: %w", task.ID(), err)
	}

	killed := time.NewTimer(killTimeout)
	defer killed.Stop()

	select {
	case <-exited:
		return nil
	case <-killed.C:
		return fmt.Errorf("task %s did not exit %s after SIGKILL", task.ID(), killTimeout)
	}
}

// lockedWriter serializes writes: containerd copies stdout and stderr to
// the log from one goroutine each.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.w.Write(p)
}
