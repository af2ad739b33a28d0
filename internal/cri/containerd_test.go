package cri

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/platform"
)

// TestContainerdServices lays a container-mode runtime out in a temporary
// EPHEMERAL and checks what containerd will find there.
func TestContainerdServices(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	rt := NewRuntime(platform.Platform{Name: platform.Container, EphemeralDir: dir})
	c := NewContainerd(ContainerdOptions{Runtime: rt, Executable: "/bin/talosbox", RuncPath: "/bin/runc", OOMScoreAdjPath: "-"})

	if c.Prepared() {
		t.Fatal("prepared before Services")
	}

	svcs, err := c.Services(&configs.Config{Machine: &configs.MachineConfig{}})
	if err != nil {
		t.Fatal(err)
	}

	if !c.Prepared() {
		t.Error("not prepared after Services")
	}

	if len(svcs) != 2 || svcs[0].ID != constants.ContainerdServiceID || svcs[1].ID != constants.CRIServiceID {
		t.Fatalf("services = %+v, want containerd and cri", svcs)
	}

	for name, want := range map[string]string{"containerd": "/bin/talosbox", shimName: "/bin/talosbox", "runc": "/bin/runc"} {
		if got, err := os.Readlink(filepath.Join(rt.BinDir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}

	for _, p := range []string{rt.SystemConfig, rt.CRIConfig, filepath.Join(rt.CRIConfDir, "00-base.part"), filepath.Join(rt.CRIConfDir, "01-registries.part")} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}

	merged, err := os.ReadFile(filepath.Join(rt.CRIConfDir, "cri.toml"))
	if err != nil {
		t.Fatal(err)
	}

	// OOMScoreAdjPath "-" is a node that may not lower oom_score_adj.
	if !strings.Contains(string(merged), "restrict_oom_score_adj = true") {
		t.Errorf("cri.toml does not restrict oom_score_adj:\n%s", merged)
	}
}

// TestContainerdSocketTooLong: a state dir too deep for a unix socket
// fails with a hint, before anything is written.
func TestContainerdSocketTooLong(t *testing.T) {
	t.Parallel()

	dir := filepath.Join(t.TempDir(), strings.Repeat("d", maxSocketPath))
	c := NewContainerd(ContainerdOptions{Runtime: NewRuntime(platform.Platform{Name: platform.Container, EphemeralDir: dir}), Executable: "/bin/talosbox"})

	if _, err := c.Services(nil); err == nil || !strings.Contains(err.Error(), "use a shorter --state-dir") {
		t.Fatalf("err = %v, want the socket path refused", err)
	}

	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s was made: %v", dir, err)
	}
}

func TestRegistrydWithoutCache(t *testing.T) {
	t.Parallel()

	if _, ok := Registryd(t.TempDir()); ok {
		t.Error("registryd serves a directory without index.json")
	}
}
