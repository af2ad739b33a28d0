package talosctl_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/applets/talosctl"
	"github.com/talosbox/talosbox/internal/apid"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/platform"
)

// This file is the only one that starts a real node: test files are not
// part of talosctl's import graph (TestImportGraph lists it without
// -test), so talosctl itself still never links apid or machine.

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.String()
}

// startRealNode generates a cluster with talosctl, boots a container-mode
// node on its control-plane config with apid on 127.0.0.1, and returns a
// runner for talosctl commands against it.
func startRealNode(t *testing.T) (run func(args ...string) (int, string, string), addr string) {
	t.Helper()

	dir := t.TempDir()
	if code, _, errOut := runCtl("gen", "config", "e2e", "https://10.5.0.2:6443", "-o", filepath.Join(dir, "cluster")); code != 0 {
		t.Fatalf("gen config: %s", errOut)
	}

	p, err := platform.Detect(platform.Options{Flag: platform.Container, StateDir: filepath.Join(dir, "node")})
	if err != nil {
		t.Fatal(err)
	}

	console := &lockedBuffer{}
	ring := events.New(0)

	node, err := machine.New(machine.Options{
		Platform: p, ConfigPath: filepath.Join(dir, "cluster", "controlplane.yaml"), Console: console, NoContainerd: true, StopTimeout: 5 * time.Second,
		OnEvent: func(ev machine.Event) { ring.Publish(ev.Type, ev.Message, ev.Fields) },
	})
	if err != nil {
		t.Fatal(err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	srv, err := apid.NewServer(apid.Options{Node: node, Events: ring, StopGrace: 2 * time.Second}, console)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)

	go func() { done <- node.Run(ctx) }()
	go func() { done <- srv.Serve(ctx, lis) }()

	t.Cleanup(func() {
		cancel()

		for range 2 {
			if err := <-done; err != nil && !errors.Is(err, machine.ErrPowerOff) && !errors.Is(err, context.Canceled) {
				t.Errorf("stop: %v", err)
			}
		}

		if t.Failed() {
			t.Logf("console:\n%s", console.String())
		}
	})

	waitCtx, waitCancel := context.WithTimeout(ctx, time.Minute)
	defer waitCancel()

	if err := srv.WaitServing(waitCtx, false); err != nil {
		t.Fatalf("apid never served with mutual TLS: %v\n%s", err, console.String())
	}

	addr = lis.Addr().String()
	talosconfigPath := filepath.Join(dir, "cluster", "talosconfig")

	return func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer

		code := talosctl.Main(context.Background(), append([]string{"--talosconfig", talosconfigPath, "-e", addr}, args...), applet.Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" },
		})

		return code, out.String(), errOut.String()
	}, addr
}

func TestEndToEndRealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a node")
	}

	run, addr := startRealNode(t)

	check := func(args ...string) string {
		t.Helper()

		code, out, errOut := run(args...)
		if code != 0 {
			t.Fatalf("talosctl %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}

		return out
	}

	if out := check("version"); !strings.Contains(out, "Server:\n\tNODE:") || !strings.Contains(out, "\tTag:") {
		t.Errorf("version:\n%s", out)
	}

	if out := check("-n", addr, "get", "rd"); !strings.Contains(out, "ResourceDefinition") || !strings.Contains(out, "machineconfigs.") {
		t.Errorf("get rd:\n%s", out)
	}

	if out := check("-n", addr, "services"); !strings.HasPrefix(out, "NODE") || !strings.Contains(out, "machined") {
		t.Errorf("services:\n%s", out)
	}

	if out := check("-n", addr, "service", "machined"); !strings.Contains(out, "ID       machined\n") || !strings.Contains(out, "EVENTS   [") {
		t.Errorf("service machined:\n%s", out)
	}

	if out := check("get", "mc", "-o", "yaml"); !strings.Contains(out, "version: v1alpha1") {
		t.Errorf("get mc -o yaml:\n%s", out)
	}

	code, _, errOut := run("get", "foo")
	if code != 1 || !strings.Contains(errOut, `resource type "foo" not found`) {
		t.Errorf("get foo: exit %d %q", code, errOut)
	}

	out := check("patch", "mc", "--dry-run", "-p", `[{"op": "add", "path": "/machine/sysctls", "value": {"net.core.somaxconn": "65535"}}]`)
	if !strings.Contains(out, "somaxconn") {
		t.Errorf("patch --dry-run shows no diff:\n%s", out)
	}

	code, _, errOut = run("patch", "mc", "-p", `[{"op": "replace", "path": "/machine/nope", "value": 1}]`)
	if code != 1 || !strings.Contains(errOut, "/machine/nope") {
		t.Errorf("bad patch: exit %d %q", code, errOut)
	}
}
