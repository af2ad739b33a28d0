package provision

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

func TestBuildImageRuns(t *testing.T) {
	d := newDocker(t)
	tag := tinyImage(t, d)
	ctx := testCtx(t, time.Minute)

	if ok, err := d.ImageExists(ctx, tag); err != nil || !ok {
		t.Fatalf("ImageExists(%s) = %v, %v", tag, ok, err)
	}
	if ok, err := d.ImageExists(ctx, "talosbox-provision-test:never-built"); err != nil || ok {
		t.Fatalf("ImageExists(never built) = %v, %v", ok, err)
	}

	// Run it through the applet symlink, the way argv[0] dispatch will see it.
	res, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: clusterName() + "-run",
		Config: &container.Config{
			Image:      tag,
			Entrypoint: []string{"tiny", "hello"},
			Labels:     map[string]string{testLabel: "1"},
		},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := d.api.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if _, err := d.api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}

	var line string
	waitFor(t, 15*time.Second, "tiny's report in the logs", func() (bool, error) {
		logs, err := d.api.ContainerLogs(ctx, res.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			return false, err
		}
		defer logs.Close()
		var stdout, stderr bytes.Buffer
		if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil {
			return false, err
		}
		line, _, _ = strings.Cut(stdout.String(), "\n")
		return line != "", nil
	})
	var r tinyReport
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	t.Logf("report: %+v", r)
	if len(r.Args) != 2 || r.Args[0] != "tiny" || r.Args[1] != "hello" {
		t.Errorf("argv = %q, want [tiny hello]", r.Args)
	}
	if r.Applet != "/talosbox" {
		t.Errorf("/usr/local/bin/tiny -> %q, want /talosbox", r.Applet)
	}
	if r.TmpMode != "dtrwxrwxrwx" {
		t.Errorf("/tmp mode %s, want dtrwxrwxrwx", r.TmpMode)
	}
	if r.Platform != "container" {
		t.Errorf("TALOSBOX_PLATFORM = %q from the image, want container", r.Platform)
	}
	if !r.StateWritable {
		t.Errorf("%s is not writable", StateDir)
	}

	// SIGTERM to PID 1 ends it cleanly and promptly.
	stop := 5
	start := time.Now()
	if _, err := d.api.ContainerStop(ctx, res.ID, client.ContainerStopOptions{Timeout: &stop}); err != nil {
		t.Fatal(err)
	}
	ins, err := d.api.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ins.Container.State.ExitCode != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", ins.Container.State.ExitCode)
	}
	t.Logf("stopped in %s", time.Since(start))
}

func TestBuildErrorIsReported(t *testing.T) {
	d := newDocker(t)
	ctx := testCtx(t, time.Minute)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	df := "FROM scratch\nCOPY no-such-file /\n"
	_ = tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	_, _ = tw.Write([]byte(df))
	_ = tw.Close()

	var progress bytes.Buffer
	err := d.build(ctx, "talosbox-provision-test:broken-"+randomHex(4), map[string]string{testLabel: "1"}, false, &buf, &progress)
	if err == nil {
		t.Fatal("a COPY of a missing file built")
	}
	if !strings.Contains(err.Error(), "no-such-file") {
		t.Errorf("error does not name the missing file: %v", err)
	}
	t.Logf("error: %v\nprogress:\n%s", err, progress.String())

	if err := d.BuildImage(ctx, BuildRequest{Tag: "x:y", Binary: t.TempDir() + "/missing"}, nil); err == nil {
		t.Error("BuildImage with a missing binary succeeded")
	}
}

// TestBuildImageKeepsAnUpToDateImage: a second build of the same request
// keeps the image (no build), a changed request builds anew, and NoCache
// always builds.
func TestBuildImageKeepsAnUpToDateImage(t *testing.T) {
	d := newDocker(t)
	tinyImage(t, d) // builds the tiny binary
	ctx := testCtx(t, 2*time.Minute)

	tag := "talosbox-provision-test:" + randomHex(4)
	t.Cleanup(func() {
		_, _ = d.api.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})

	req := BuildRequest{Tag: tag, Binary: filepath.Join(tmpDir, "tiny"), Applets: []string{"tiny"},
		Env: []string{"A=1"}, Labels: map[string]string{testLabel: "1"}}
	id := func() string {
		t.Helper()
		img, err := d.api.ImageInspect(ctx, tag)
		if err != nil {
			t.Fatal(err)
		}
		return img.ID
	}
	build := func(req BuildRequest) string {
		t.Helper()
		var out strings.Builder
		if err := d.BuildImage(ctx, req, &out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}

	if out := build(req); strings.Contains(out, "up to date") {
		t.Fatalf("a first build was up to date:\n%s", out)
	}
	first := id()

	if out := build(req); !strings.Contains(out, "up to date") || id() != first {
		t.Fatalf("the same request built again (image %s, was %s):\n%s", id(), first, out)
	}

	changed := req
	changed.Env = []string{"A=2"}
	if out := build(changed); strings.Contains(out, "up to date") || id() == first {
		t.Fatalf("a changed request kept the old image:\n%s", out)
	}
	img, err := d.api.ImageInspect(ctx, tag)
	if err != nil || !slices.Contains(img.Config.Env, "A=2") {
		t.Fatalf("the rebuilt image's env %v (%v), want A=2", img.Config.Env, err)
	}

	second := id()
	changed.NoCache = true
	if out := build(changed); strings.Contains(out, "up to date") || id() == second {
		t.Fatalf("NoCache kept the image:\n%s", out)
	}
}
