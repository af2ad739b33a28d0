package cri

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/cri"
)

// TestRegistryController edits the mirrors of a running node's config and
// checks that both the resource and the hosts tree follow, as a live
// apply-config needs.
func TestRegistryController(t *testing.T) {
	t.Parallel()

	rt := NewRuntime(platform.Platform{Name: platform.Container, EphemeralDir: t.TempDir()})
	c := NewContainerd(ContainerdOptions{Runtime: rt, Executable: "/bin/talosbox", RuncPath: "/bin/runc", OOMScoreAdjPath: "-"})

	if _, err := c.Services(nil); err != nil {
		t.Fatal(err)
	}

	store := bus.NewStore(bus.StoreOptions{})
	brt := bus.NewRuntime(store, bus.RuntimeOptions{})

	if err := brt.Register(&RegistryController{Containerd: c}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		brt.Run(ctx) //nolint:errcheck // ends with the test
	}()

	t.Cleanup(func() { cancel(); <-done })

	cfg := &configs.Config{Machine: &configs.MachineConfig{Registries: &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{
		"ghcr.io":   {Endpoints: []string{"http://10.5.0.1:5000"}},
		"docker.io": {Endpoints: []string{"http://10.5.0.1:5001"}},
	}}}}

	mc := bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg})
	if _, err := store.Modify(ctx, mc, func(res bus.Resource) error {
		res.(*config.MachineConfig).TypedSpec().Config = cfg
		return nil
	}, bus.WithOwner("machined")); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(20 * time.Second)

	for {
		res, err := bus.GetAs[*cri.RegistriesConfig](ctx, store, bus.Pointer{Namespace: cri.NamespaceCRI, Type: cri.RegistriesConfigType, ID: cri.RegistriesConfigID})
		if err == nil && slices.Equal(res.TypedSpec().Hosts, []string{"docker.io", "ghcr.io"}) {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("RegistriesConfig: %v, %v", res, err)
		}

		time.Sleep(20 * time.Millisecond)
	}

	if _, err := os.Stat(filepath.Join(rt.HostsDir, HostDirectory("ghcr.io"), "hosts.toml")); err != nil {
		t.Errorf("the hosts tree misses ghcr.io: %v", err)
	}
}
