package cri_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/containers/containerdtest"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/platform"
)

func TestMain(m *testing.M) {
	containerdtest.Main()
	os.Exit(m.Run())
}

// criHealth is the CRI service's health check, pointed at a real
// containerd's socket.
func criHealth(t *testing.T, sock string, onLoadError func(error)) func(context.Context) error {
	t.Helper()

	// Short, for the system instance's socket path.
	dir, err := os.MkdirTemp("", "crih")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(dir) })

	rt := cri.NewRuntime(platform.Platform{Name: platform.Container, EphemeralDir: dir})
	rt.CRISocket = sock

	c := cri.NewContainerd(cri.ContainerdOptions{Runtime: rt, Executable: "/bin/true", RuncPath: "/bin/true", OOMScoreAdjPath: "-", OnCRILoadError: onLoadError})

	svcs, err := c.Services(&configs.Config{Machine: &configs.MachineConfig{}})
	if err != nil {
		t.Fatal(err)
	}

	return svcs[1].Health.Func
}

func check(t *testing.T, fn func(context.Context) error) error {
	t.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	return fn(ctx)
}

// containerd answers SERVING whatever its plugins did; the CRI service's
// health says whether the CRI plugins loaded, with containerd's reason.
func TestCRIHealth(t *testing.T) {
	t.Run("loaded", func(t *testing.T) {
		sock := containerdtest.Start(t, containerdtest.Options{CRI: true})

		if err := check(t, criHealth(t, sock, nil)); err != nil {
			t.Fatalf("a containerd whose CRI loaded is unhealthy: %v", err)
		}
	})

	t.Run("a runtime whose base_runtime_spec is not there", func(t *testing.T) {
		// Decoded, so containerd starts; the runtime plugin's init refuses
		// it, so the CRI does not load.
		missing := filepath.Join(t.TempDir(), "spec.json")
		sock := containerdtest.Start(t, containerdtest.Options{CRI: true,
			Config: "\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\nbase_runtime_spec = '" + missing + "'\n"})

		var (
			mu    sync.Mutex
			heard []error
		)

		fn := criHealth(t, sock, func(err error) {
			mu.Lock()
			heard = append(heard, err)
			mu.Unlock()
		})

		for range 2 {
			err := check(t, fn)

			le, ok := errors.AsType[*cri.LoadError](err)
			if !ok {
				t.Fatalf("health = %v, want a *cri.LoadError", err)
			}

			if le.Plugin != "io.containerd.cri.v1.runtime" || !strings.Contains(le.Message, missing) {
				t.Errorf("health = %v, want the runtime plugin's error naming %s", err, missing)
			}
		}

		mu.Lock()
		defer mu.Unlock()

		// Heard once: the same error again is no news.
		if len(heard) != 1 {
			t.Errorf("OnCRILoadError called %d times: %v", len(heard), heard)
		}
	})
}
