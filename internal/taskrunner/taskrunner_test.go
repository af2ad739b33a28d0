package taskrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/image-spec/identity"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	ctrs "github.com/talosbox/talosbox/internal/containers"
)

// TestRunsImage runs the image's own entrypoint and command, with the
// environment added to the image's, and logs both output streams.
func TestRunsImage(t *testing.T) {
	t.Parallel()

	e := setup(t)
	o := e.options()
	o.Args = nil
	o.Env = []string{"FOO=bar"}

	r := start(o)
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v; log:\n%s", err, r.log)
	}

	log := r.log.String()
	for _, want := range []string{
		"hello from the task",
		"hello from stderr",
		`args=["-cat" "/image.txt"]`,
		"env FOO=bar",
		`cat /image.txt="from the image\n" <nil>`,
	} {
		if !hasLine(log, want) {
			t.Errorf("no line %q in the log:\n%s", want, log)
		}
	}

	// Not privileged: the default capabilities, fewer than ours.
	if got := field(t, log, "capeff"); got == ownCapEff(t) {
		t.Errorf("unprivileged task has all our capabilities (%s)", got)
	}
}

// TestExitStatus: a failed task is an error with its status.
func TestExitStatus(t *testing.T) {
	t.Parallel()

	e := setup(t)
	o := e.options("-exit", "3")

	err := start(o).wait(t)
	if want := fmt.Sprintf("task %s exited with status 3", o.ID); err == nil || err.Error() != want {
		t.Errorf("Run = %v, want %q", err, want)
	}
}

// TestStopSendsSIGTERM: cancelling the context stops the task with
// SIGTERM, and the run counts as a success.
func TestStopSendsSIGTERM(t *testing.T) {
	t.Parallel()

	e := setup(t)
	o := e.options("-wait")
	// Far longer than the test waits: only SIGTERM can end the task.
	o.StopTimeout = time.Hour

	r := start(o)
	r.waitFor(t, "ready")
	r.cancel()

	if err := r.wait(t); err != nil {
		t.Errorf("Run = %v after a stop, want nil", err)
	}

	if !hasLine(r.log.String(), "got SIGTERM") {
		t.Errorf("the task did not get SIGTERM; log:\n%s", r.log)
	}
}

// TestStopKillsAfterTimeout: a task that outlives SIGTERM is killed
// once StopTimeout has passed.
func TestStopKillsAfterTimeout(t *testing.T) {
	t.Parallel()

	e := setup(t)
	o := e.options("-ignore-term")
	o.StopTimeout = 500 * time.Millisecond

	r := start(o)
	r.waitFor(t, "ready")

	stopped := time.Now()

	r.cancel()

	if err := r.wait(t); err != nil {
		t.Errorf("Run = %v after a stop, want nil", err)
	}

	if took := time.Since(stopped); took < o.StopTimeout {
		t.Errorf("stopped after %s, before StopTimeout (%s)", took, o.StopTimeout)
	}

	if !hasLine(r.log.String(), "ignoring SIGTERM") {
		t.Errorf("the task did not get SIGTERM first; log:\n%s", r.log)
	}
}

// TestOrphanedChild: with the host's PID namespace, a child the task
// leaves behind does not die with it, and holds the task's output open;
// the run still ends, and takes the child with it.
func TestOrphanedChild(t *testing.T) {
	t.Parallel()

	e := setup(t)
	o := e.options("-orphan")
	o.HostPID = true

	r := start(o)
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v; log:\n%s", err, r.log)
	}

	orphan, err := strconv.Atoi(field(t, r.log.String(), "orphan"))
	if err != nil {
		t.Fatal(err)
	}

	if err := syscall.Kill(orphan, 0); err != syscall.ESRCH {
		t.Errorf("orphan PID %d: kill 0 = %v, want ESRCH", orphan, err)
	}
}

// TestReplacesStale: what a crashed machined left with the same ID (a
// container with its task still running, or a lone snapshot) does not
// stop the next run, and is gone after it.
func TestReplacesStale(t *testing.T) {
	t.Parallel()

	e := setup(t)

	if _, err := ctrs.Pull(e.ctx, e.sock, testNamespace, progRef, e.hosts); err != nil {
		t.Fatal(err)
	}

	img, err := e.c.GetImage(e.ctx, progRef)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("running container", func(t *testing.T) {
		o := e.options()

		cnt, err := e.c.NewContainer(e.ctx, o.ID,
			client.WithImage(img),
			client.WithNewSnapshot(o.ID, img),
			client.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("/prog", "-ignore-term"), oci.WithCgroup(o.CgroupsPath)),
		)
		if err != nil {
			t.Fatal(err)
		}

		task, err := cnt.NewTask(e.ctx, cio.NullIO)
		if err != nil {
			t.Fatal(err)
		}

		if err := task.Start(e.ctx); err != nil {
			t.Fatal(err)
		}

		stale := int(task.Pid())

		r := start(o)
		if err := r.wait(t); err != nil {
			t.Fatalf("Run: %v; log:\n%s", err, r.log)
		}

		if !hasLine(r.log.String(), "hello from the task") {
			t.Errorf("the new task did not run; log:\n%s", r.log)
		}

		// The stale task was killed and reaped by its shim.
		if err := syscall.Kill(stale, 0); err != syscall.ESRCH {
			t.Errorf("stale task PID %d: kill 0 = %v, want ESRCH", stale, err)
		}
	})

	t.Run("lone snapshot", func(t *testing.T) {
		o := e.options()

		// In a lease, which holds it as machined's crash would have: the
		// garbage collector does not take it first.
		ctx, done, err := e.c.WithLease(e.ctx)
		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(func() { done(e.ctx) }) //nolint:errcheck // the daemon goes too

		diffs, err := img.RootFS(ctx)
		if err != nil {
			t.Fatal(err)
		}

		sn := e.c.SnapshotService("")
		if _, err := sn.Prepare(ctx, o.ID, identity.ChainID(diffs).String()); err != nil {
			t.Fatal(err)
		}

		r := start(o)
		if err := r.wait(t); err != nil {
			t.Fatalf("Run: %v; log:\n%s", err, r.log)
		}
	})
}

// TestHostNamespaces: HostNetwork and HostPID share this process's
// namespaces; without them the task has its own.
func TestHostNamespaces(t *testing.T) {
	t.Parallel()

	e := setup(t)

	for _, host := range []bool{true, false} {
		t.Run(fmt.Sprintf("host=%t", host), func(t *testing.T) {
			o := e.options()
			o.HostNetwork, o.HostPID = host, host

			r := start(o)
			if err := r.wait(t); err != nil {
				t.Fatalf("Run: %v; log:\n%s", err, r.log)
			}

			for _, ns := range []string{"net", "pid"} {
				ours, err := os.Readlink("/proc/self/ns/" + ns)
				if err != nil {
					t.Fatal(err)
				}

				if got := field(t, r.log.String(), "ns "+ns); (got == ours) != host {
					t.Errorf("%s namespace inside %s, ours %s; want shared = %t", ns, got, ours, host)
				}
			}
		})
	}
}

// TestSpec runs a task set up as the kubelet is: privileged, with
// mounts, a cgroup, an OOM score and shared rootfs propagation, and
// checks each from inside or from the host.
func TestSpec(t *testing.T) {
	t.Parallel()

	e := setup(t)

	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "file"), []byte("mounted\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	o := e.options("-wait", "-cat", "/mnt/data/file")
	o.Mounts = []specs.Mount{{Destination: "/mnt/data", Source: data, Type: "bind", Options: []string{"rbind", "ro"}}}
	o.CgroupsPath = "/" + o.ID
	o.OOMScoreAdj = oomScoreAdj(t)
	o.Privileged = true
	o.HostNetwork, o.HostPID = true, true
	o.RootfsPropagation = "shared"

	r := start(o)
	r.waitFor(t, "ready")

	log := r.log.String()
	for _, want := range []string{`cat /mnt/data/file="mounted\n" <nil>`, fmt.Sprintf("oom=%d <nil>", o.OOMScoreAdj)} {
		if !hasLine(log, want) {
			t.Errorf("no line %q in the log:\n%s", want, log)
		}
	}

	if got, ours := field(t, log, "capeff"), ownCapEff(t); got != ours {
		t.Errorf("privileged task capabilities %s, ours %s", got, ours)
	}

	cgroups, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", e.taskPID(t, o.ID)))
	if err != nil {
		t.Fatal(err)
	}

	if !regexp.MustCompile(`(?m):` + regexp.QuoteMeta(o.CgroupsPath) + `$`).Match(cgroups) {
		t.Errorf("task not in cgroup %s:\n%s", o.CgroupsPath, cgroups)
	}

	cnt, err := e.c.LoadContainer(e.ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}

	spec, err := cnt.Spec(e.ctx)
	if err != nil {
		t.Fatal(err)
	}

	if spec.Linux.RootfsPropagation != "shared" {
		t.Errorf("rootfs propagation %q, want shared", spec.Linux.RootfsPropagation)
	}

	if len(spec.Linux.MaskedPaths) != 0 || len(spec.Linux.ReadonlyPaths) != 0 || spec.Linux.Seccomp != nil {
		t.Errorf("privileged spec has masked paths %q, read-only paths %q, seccomp %v",
			spec.Linux.MaskedPaths, spec.Linux.ReadonlyPaths, spec.Linux.Seccomp)
	}

	if d := spec.Linux.Resources.Devices; len(d) != 1 || !d[0].Allow || d[0].Access != "rwm" {
		t.Errorf("device rules %+v, want all allowed", d)
	}

	if !slices.ContainsFunc(spec.Linux.Devices, func(d specs.LinuxDevice) bool { return d.Path == "/dev/kmsg" }) && exists("/dev/kmsg") {
		t.Errorf("the host's /dev/kmsg is not among the devices %+v", spec.Linux.Devices)
	}

	r.cancel()

	if err := r.wait(t); err != nil {
		t.Errorf("Run = %v after a stop, want nil", err)
	}
}

// TestMissingImage: the error names the image and the mirror asked.
func TestMissingImage(t *testing.T) {
	t.Parallel()

	e := setup(t)
	o := e.options()
	o.Image = mirrored + "/taskrunner/absent:v1"

	err := start(o).wait(t)
	if err == nil || !strings.Contains(err.Error(), o.Image) || !strings.Contains(err.Error(), e.mirror) {
		t.Errorf("Run = %v, want an error naming %s and %s", err, o.Image, e.mirror)
	}
}

// TestNoContainerd fails plainly, without waiting for a dial timeout.
func TestNoContainerd(t *testing.T) {
	t.Parallel()

	r := New(Options{Socket: "/nonexistent/containerd.sock", Namespace: "system", ID: "kubelet", Image: "example.test/kubelet:v1"})

	err := r.Run(t.Context(), newLogBuf())
	if err == nil || !strings.Contains(err.Error(), "no socket at /nonexistent/containerd.sock") {
		t.Errorf("Run = %v, want no socket", err)
	}

	if err := New(Options{Socket: "/x", Namespace: "system", Image: "x"}).Run(t.Context(), newLogBuf()); err == nil || !strings.Contains(err.Error(), "no ID given") {
		t.Errorf("Run without an ID = %v", err)
	}
}

// oomScoreAdj is the kubelet's -450 when this process may lower OOM
// scores (CAP_SYS_RESOURCE, which some sandboxes take away), else a
// raised one, which needs nothing.
func oomScoreAdj(t *testing.T) int {
	t.Helper()

	eff, err := strconv.ParseUint(ownCapEff(t), 16, 64)
	if err != nil {
		t.Fatal(err)
	}

	if eff&(1<<unix.CAP_SYS_RESOURCE) != 0 {
		return -450
	}

	return 450
}

// ownCapEff is this process's effective capability set.
func ownCapEff(t *testing.T) string {
	t.Helper()

	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}

	return field(t, strings.ReplaceAll(string(status), "CapEff:\t", "CapEff="), "CapEff")
}
