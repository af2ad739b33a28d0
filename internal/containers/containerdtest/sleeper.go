package containerdtest

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/containerd/v2/plugins"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// RunSleeper starts a container id in namespace ns running sleep from the
// host's /usr (bind-mounted read-only into an empty root), so a test has a
// real task without an image, and returns its PID. It is killed when the
// test ends.
func RunSleeper(t testing.TB, c *client.Client, ns, id string, labels map[string]string) uint32 {
	t.Helper()

	ctx := namespaces.WithNamespace(context.Background(), ns)

	root := t.TempDir()
	for _, d := range []string{"usr", "proc", "dev", "sys", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// Merged-/usr hosts link these; others have them as directories, and
	// sleep is found under /usr/bin either way.
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}

	// runc keeps its state under /run/containerd/runc/<namespace> unless
	// told otherwise: test daemons running at once (go test runs packages
	// in parallel) would share it, and collide on container IDs.
	runcRoot, err := os.MkdirTemp("", "runc")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(runcRoot) })

	cnt, err := c.NewContainer(ctx, id,
		client.WithRuntime(plugins.RuntimeRuncV2, &options.Options{Root: runcRoot}),
		client.WithContainerLabels(labels),
		client.WithNewSpec(
			oci.WithDefaultSpec(),
			oci.WithRootFSPath(root),
			oci.WithProcessArgs("/usr/bin/sleep", "3600"),
			oci.WithMounts([]specs.Mount{{Destination: "/usr", Source: "/usr", Type: "bind", Options: []string{"rbind", "ro"}}}),
		),
	)
	if err != nil {
		t.Fatal(err)
	}

	task, err := cnt.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}

	exited, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if err := task.Kill(ctx, syscall.SIGKILL); err != nil {
			t.Errorf("kill %s: %v", id, err)
			return
		}

		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			t.Errorf("%s did not exit", id)
		}

		if _, err := task.Delete(ctx); err != nil {
			t.Errorf("delete %s: %v", id, err)
		}
	})

	return task.Pid()
}
