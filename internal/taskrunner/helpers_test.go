package taskrunner

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// waitTimeout bounds every wait in these tests; nothing comes close.
const waitTimeout = 60 * time.Second

const (
	testNamespace = "system"
	// mirrored is the registry the tests pull from: it does not exist,
	// only its mirror does, as with machine.registries on a node.
	mirrored = "example.test"
	progRef  = mirrored + "/taskrunner/prog:v1"
	// imageFile is a file of the image, printed by the image's command.
	imageFile = "/image.txt"
)

// runcErr says why runc cannot be found, for the tests to fail with.
var runcErr error

func TestMain(m *testing.M) {
	containerdtest.Main()

	runcErr = findRunc()

	code := m.Run()

	if progDir != "" {
		os.RemoveAll(progDir)
	}

	os.Exit(code)
}

// findRunc makes sure containerd's shim finds runc: on PATH, or the one
// make images builds, whose directory is then put on PATH.
func findRunc() error {
	if _, err := exec.LookPath("runc"); err == nil {
		return nil
	}

	dir, err := os.Getwd()
	if err != nil {
		return err
	}

	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}

		if dir == filepath.Dir(dir) {
			return errors.New("no runc on PATH and no repository root found: run make images")
		}
	}

	bin := filepath.Join(dir, "_out", "images", "runtime")
	if _, err := os.Stat(filepath.Join(bin, "runc")); err != nil {
		return fmt.Errorf("no runc on PATH nor in %s: run make images", bin)
	}

	return os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

var (
	progOnce sync.Once
	progDir  string
	progBin  []byte
	progErr  error
)

// prog is testdata/prog, built once, statically: the image has nothing
// else, no libc.
func prog(t *testing.T) []byte {
	t.Helper()

	progOnce.Do(func() {
		if progDir, progErr = os.MkdirTemp("", "taskrunner-prog"); progErr != nil {
			return
		}

		out := filepath.Join(progDir, "prog")
		cmd := exec.Command("go", "build", "-o", out, "./testdata/prog")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")

		if b, err := cmd.CombinedOutput(); err != nil {
			progErr = fmt.Errorf("building testdata/prog: %w\n%s", err, b)
			return
		}

		progBin, progErr = os.ReadFile(out)
	})

	if progErr != nil {
		t.Fatal(progErr)
	}

	return progBin
}

// serveImage runs a registry holding progRef's repository at
// progRef's path, and returns its host:port. The image's command prints
// imageFile, so a run without Args shows the image's own entrypoint and
// command were used.
func serveImage(t *testing.T) string {
	t.Helper()

	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"prog", 0o755, prog(t)},
		{strings.TrimPrefix(imageFile, "/"), 0o644, []byte("from the image\n")},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}

		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}

	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}

	cfg.OS, cfg.Architecture = runtime.GOOS, runtime.GOARCH
	cfg.Config = v1.Config{
		Entrypoint: []string{"/prog"},
		Cmd:        []string{"-cat", imageFile},
		Env:        []string{"PATH=/", "FOO=from-image"},
	}

	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)

	host := strings.TrimPrefix(srv.URL, "http://")

	ref, err := name.ParseReference(host + "/" + strings.TrimPrefix(progRef, mirrored+"/"))
	if err != nil {
		t.Fatal(err)
	}

	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}

	return host
}

// env is a containerd and a registry mirror with the test image.
type env struct {
	t      *testing.T
	sock   string
	c      *client.Client
	ctx    context.Context // in testNamespace
	hosts  string
	mirror string // the mirror's endpoint, http://host:port
}

func setup(t *testing.T) *env {
	t.Helper()

	if runcErr != nil {
		t.Fatalf("%v", runcErr)
	}

	e := &env{t: t, sock: containerdtest.Start(t, containerdtest.Options{})}
	e.c = containerdtest.Connect(t, e.sock)
	e.ctx = namespaces.WithNamespace(context.Background(), testNamespace)
	e.hosts = t.TempDir()
	e.mirror = "http://" + serveImage(t)
	containerdtest.MirrorOnly(t, e.hosts, mirrored, e.mirror)

	// Registered after the daemon's own cleanup, so it runs first.
	t.Cleanup(e.checkClean)

	return e
}

var ids atomic.Int32

// options runs prog with args as a new container ID. IDs are unique to
// this process: runc keeps its state by namespace and ID under one
// directory, shared with whatever else runs containers on this host.
func (e *env) options(args ...string) Options {
	id := fmt.Sprintf("taskrunner%d-%d", os.Getpid(), ids.Add(1))

	return Options{
		Socket:    e.sock,
		Namespace: testNamespace,
		ID:        id,
		Image:     progRef,
		HostsDir:  e.hosts,
		Args:      append([]string{"/prog"}, args...),
		// A cgroup of its own at the top, which runc removes with the
		// task: the default, /<namespace>/<ID>, leaves /<namespace>
		// behind on the host.
		CgroupsPath: "/" + id,
	}
}

// checkClean fails the test if a run left a container, a snapshot other
// than the image's layers, or a FIFO behind.
func (e *env) checkClean() {
	t := e.t

	cs, err := e.c.Containers(e.ctx)
	if err != nil {
		t.Errorf("listing containers: %v", err)
	}

	for _, c := range cs {
		t.Errorf("container %s left behind", c.ID())
	}

	err = e.c.SnapshotService(defaults.DefaultSnapshotter).Walk(e.ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind != snapshots.KindCommitted {
			t.Errorf("snapshot %s (%s) left behind", info.Name, info.Kind)
		}

		return nil
	})
	if err != nil {
		t.Errorf("listing snapshots: %v", err)
	}

	fifos, err := os.ReadDir(filepath.Join(filepath.Dir(e.sock), "fifo"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading the FIFO dir: %v", err)
	}

	for _, f := range fifos {
		t.Errorf("FIFO dir %s left behind", f.Name())
	}
}

// run is one Run in the background.
type run struct {
	log    *logBuf
	cancel context.CancelFunc
	done   chan error
}

func start(o Options) *run {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{log: newLogBuf(), cancel: cancel, done: make(chan error, 1)}

	go func() { r.done <- New(o).Run(ctx, r.log) }()

	return r
}

// wait returns Run's result.
func (r *run) wait(t *testing.T) error {
	t.Helper()

	select {
	case err := <-r.done:
		return err
	case <-time.After(waitTimeout):
		r.cancel()
		t.Fatalf("Run did not return; log:\n%s", r.log)
		return nil
	}
}

// logBuf is a log that says when it grows.
type logBuf struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newLogBuf() *logBuf { return &logBuf{changed: make(chan struct{})} }

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	close(l.changed)
	l.changed = make(chan struct{})

	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.String()
}

// waitFor returns once the log has a line s, failing the test if the run
// ends first or it takes too long.
func (r *run) waitFor(t *testing.T, s string) {
	t.Helper()

	deadline := time.After(waitTimeout)

	for {
		r.log.mu.Lock()
		found := hasLine(r.log.b.String(), s)
		changed := r.log.changed
		r.log.mu.Unlock()

		if found {
			return
		}

		select {
		case <-changed:
		case err := <-r.done:
			t.Fatalf("Run returned %v before %q was logged; log:\n%s", err, s, r.log)
		case <-deadline:
			t.Fatalf("timed out waiting for %q; log:\n%s", s, r.log)
		}
	}
}

func hasLine(log, line string) bool {
	for l := range strings.Lines(log) {
		if strings.TrimSuffix(l, "\n") == line {
			return true
		}
	}

	return false
}

// field is the value of the first log line "<key>=<value>", up to a space.
func field(t *testing.T, log, key string) string {
	t.Helper()

	for l := range strings.Lines(log) {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			v, _, _ = strings.Cut(strings.TrimSuffix(v, "\n"), " ")
			return v
		}
	}

	t.Fatalf("no %s= in the log:\n%s", key, log)

	return ""
}

// taskPID is the PID of id's running task.
func (e *env) taskPID(t *testing.T, id string) uint32 {
	t.Helper()

	cnt, err := e.c.LoadContainer(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	task, err := cnt.Task(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}

	return task.Pid()
}
