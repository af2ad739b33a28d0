package talosctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/client/clienttest"
)

func TestRebootWait(t *testing.T) {
	f := newFixture(t, "10.0.0.2")

	// The node reboots in-process: by the first probe it is running again,
	// with a MachineStatus that went through rebooting and booting.
	f.srv.Nodes["10.0.0.2"].LifecycleHook = func(n *clienttest.Node, action string) {
		n.Resources[0] = statusResource(7, "running")
	}

	code, _, errOut := f.run("-n", "10.0.0.2", "reboot", "--wait")
	if code != 0 || errOut != "10.0.0.2: back: running\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}

	f.srv.Nodes["10.0.0.2"].LifecycleHook = func(n *clienttest.Node, _ string) { n.Down = true }

	code, _, errOut = f.run("-n", "10.0.0.2", "shutdown", "--wait")
	if code != 0 || errOut != "10.0.0.2: shut down\n" {
		t.Fatalf("shutdown: exit %d, stderr %q", code, errOut)
	}
}

func TestReset(t *testing.T) {
	f := newFixture(t, "10.0.0.2")

	f.mustRun("-n", "10.0.0.2", "reset", "--system-labels-to-wipe", "STATE,ephemeral", "--reboot", "--graceful=false")

	f.srv.Locked(func() {
		r := f.srv.Nodes["10.0.0.2"].Resets
		if len(r) != 1 || r[0].GetGraceful() || !r[0].GetReboot() || len(r[0].GetSystemPartitionsToWipe()) != 2 || r[0].GetSystemPartitionsToWipe()[1].GetLabel() != "EPHEMERAL" {
			t.Fatalf("reset requests %v", r)
		}
	})

	if code, _, errOut := f.run("reset", "--system-labels-to-wipe", "BOOT"); code != 1 || !strings.Contains(errOut, `unknown system partition label "BOOT"`) {
		t.Fatalf("exit %d %q", code, errOut)
	}
}

func TestHealth(t *testing.T) {
	f := newFixture(t, "10.0.0.2", "10.0.0.3")

	out := f.mustRun("-n", "10.0.0.2,10.0.0.3", "health")
	want := `discovered nodes: ["10.0.0.2" "10.0.0.3"]
waiting for API to be reachable on all nodes: OK
waiting for all nodes to finish boot sequence: OK
waiting for all services to be up: OK
`
	if out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestConfigNew(t *testing.T) {
	f := newFixture(t, "10.0.0.2")
	path := filepath.Join(t.TempDir(), "new-talosconfig")

	f.mustRun("config", "new", path, "--roles", "os:reader")

	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat %v, %v", fi, err)
	}

	if code, _, errOut := f.run("config", "new", path); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("overwrite: exit %d %q", code, errOut)
	}
}

func TestInsecureApply(t *testing.T) {
	p := clienttest.NewPKI(t)
	srv := &clienttest.Server{Self: "maintenance", Nodes: map[string]*clienttest.Node{"maintenance": newTestNode("maintenance")}}
	addr := clienttest.Start(t, p, srv, true)

	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}

	// No talosconfig at all: maintenance mode needs none.
	code, _, errOut := runCtl("apply-config", "--insecure", "-n", addr, "-f", file)
	if code != 0 {
		t.Fatalf("exit %d %q", code, errOut)
	}

	srv.Locked(func() {
		if n := len(srv.Nodes["maintenance"].Applied); n != 1 {
			t.Fatalf("applied %d", n)
		}
	})
}
