package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	// The daemon's plugins and the shim's task plugin, as the multicall
	// binary links them, so the plugin IDs below are checked against
	// what containerd really registers.
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	srvconfig "github.com/containerd/containerd/v2/cmd/containerd/server/config"
	"github.com/containerd/containerd/v2/version"
	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"
	"github.com/pelletier/go-toml/v2"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
)

func TestSystemConfig(t *testing.T) {
	t.Parallel()

	got := SystemConfig(InstanceOptions{
		Root:   "/system/var/lib/containerd",
		State:  "/system/run/containerd",
		Socket: "/system/run/containerd/containerd.sock",
	})

	want := `version = 3
root = '/system/var/lib/containerd'
state = '/system/run/containerd'
disabled_plugins = [
  'io.containerd.cri.v1.images',
  'io.containerd.cri.v1.runtime',
  'io.containerd.differ.v1.erofs',
  'io.containerd.grpc.v1.cri',
  'io.containerd.grpc.v1.sandbox-controllers',
  'io.containerd.grpc.v1.sandboxes',
  'io.containerd.internal.v1.opt',
  'io.containerd.internal.v1.tracing',
  'io.containerd.monitor.container.v1.restart',
  'io.containerd.mount-handler.v1.erofs',
  'io.containerd.nri.v1.nri',
  'io.containerd.podsandbox.controller.v1.podsandbox',
  'io.containerd.sandbox.controller.v1.shim',
  'io.containerd.sandbox.store.v1.local',
  'io.containerd.snapshotter.v1.blockfile',
  'io.containerd.snapshotter.v1.erofs',
  'io.containerd.tracing.processor.v1.otlp',
  'io.containerd.ttrpc.v1.otelttrpc'
]

[grpc]
  address = '/system/run/containerd/containerd.sock'

[debug]
  level = 'info'
`
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCRIConfig(t *testing.T) {
	t.Parallel()

	got := CRIConfig(InstanceOptions{
		Socket:  "/run/containerd/containerd.sock",
		Imports: []string{"/etc/cri/conf.d/cri.toml"},
	})

	want := `version = 3
disabled_plugins = [
  'io.containerd.differ.v1.erofs',
  'io.containerd.internal.v1.opt',
  'io.containerd.internal.v1.tracing',
  'io.containerd.mount-handler.v1.erofs',
  'io.containerd.snapshotter.v1.blockfile',
  'io.containerd.snapshotter.v1.erofs',
  'io.containerd.tracing.processor.v1.otlp',
  'io.containerd.ttrpc.v1.otelttrpc'
]
imports = [
  '/etc/cri/conf.d/cri.toml'
]

[grpc]
  address = '/run/containerd/containerd.sock'

[debug]
  level = 'info'
`
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func registrations() map[string]*plugin.Registration {
	regs := map[string]*plugin.Registration{}

	for _, r := range registry.Graph(func(*plugin.Registration) bool { return false }) {
		regs[r.URI()] = &r
	}

	return regs
}

// containerd matches disabled_plugins by exact type.ID and ignores names
// it does not know, so a misspelt entry would silently disable nothing.
func TestDisabledPluginsExist(t *testing.T) {
	t.Parallel()

	regs := registrations()

	for _, id := range append(SystemDisabledPlugins(), CRIDisabledPlugins()...) {
		if regs[id] == nil {
			t.Errorf("disabled plugin %q is not registered in containerd", id)
		}
	}

	// The CRI instance must keep what Kubernetes needs.
	for _, id := range []string{pluginCRIImages, pluginCRIRuntime, pluginCRIGRPC, "io.containerd.snapshotter.v1.overlayfs"} {
		if slices.Contains(CRIDisabledPlugins(), id) {
			t.Errorf("CRI instance disables %s", id)
		}
	}
}

// strictDecode decodes data into v refusing unknown keys, which
// containerd itself only logs and ignores.
func strictDecode(t *testing.T, name string, data []byte, v any) {
	t.Helper()

	if err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(v); err != nil {
		if serr, ok := errors.AsType[*toml.StrictMissingError](err); ok {
			t.Fatalf("%s: unknown keys:\n%s", name, serr.String())
		}

		t.Fatalf("%s: %v", name, err)
	}
}

// field follows a dotted Go field path ("Registry.ConfigPath").
func field(v reflect.Value, path string) any {
	for name := range strings.SplitSeq(path, ".") {
		v = reflect.Indirect(v).FieldByName(name)
	}

	return v.Interface()
}

// The CRI instance loads as containerd loads it: the main config, the
// imported merged cri.toml, then each plugin's section decoded into that
// plugin's own config struct (taken from its registration, since the
// types are internal to containerd).
func TestConfigsLoadInContainerd(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	confd := filepath.Join(dir, "conf.d")

	if err := os.Mkdir(confd, 0o700); err != nil {
		t.Fatal(err)
	}

	reg, err := RegistriesPart(&configs.RegistriesConfig{Config: map[string]configs.RegistryConfig{
		"docker.io": {Auth: &configs.RegistryAuth{Username: "u", Password: "p"}},
	}}, filepath.Join(confd, "hosts"))
	if err != nil {
		t.Fatal(err)
	}

	parts := map[string][]byte{
		BasePartName: BasePart(BaseOptions{
			RestrictOOMScoreAdj: true,
			CNIBinDirs:          []string{"/opt/cni/bin"},
			CNIConfDir:          "/etc/cni/net.d",
			SandboxImage:        "registry.k8s.io/pause:3.10",
		}),
		RegistriesPartName: reg,
	}

	for name, data := range parts {
		if err := os.WriteFile(filepath.Join(confd, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	merged, _, err := MergeParts(confd)
	if err != nil {
		t.Fatal(err)
	}

	criToml := filepath.Join(confd, "cri.toml")
	mainToml := filepath.Join(dir, "containerd.toml")
	systemToml := filepath.Join(dir, "config.toml")

	files := map[string][]byte{
		criToml:    merged,
		mainToml:   CRIConfig(InstanceOptions{Root: dir + "/root", State: dir + "/state", Socket: dir + "/c.sock", Imports: []string{criToml}}),
		systemToml: SystemConfig(InstanceOptions{Root: dir + "/sroot", State: dir + "/sstate", Socket: dir + "/s.sock"}),
	}

	for p, data := range files {
		strictDecode(t, filepath.Base(p), data, &srvconfig.Config{})

		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	system := loadAsContainerd(t, systemToml)

	if system.Root != dir+"/sroot" || system.State != dir+"/sstate" || system.Plugins[pluginCRIImages] != nil {
		t.Errorf("system config loaded as %+v", system)
	}

	checkSockets(t, system, dir+"/s.sock")

	cfg := loadAsContainerd(t, mainToml)

	if !reflect.DeepEqual(cfg.DisabledPlugins, CRIDisabledPlugins()) || cfg.Debug.Level != "info" || cfg.State != dir+"/state" {
		t.Errorf("CRI config loaded as %+v", cfg)
	}

	checkSockets(t, cfg, dir+"/c.sock")

	regs := registrations()

	checks := map[string]map[string]any{
		pluginCRIImages: {
			"DiscardUnpackedLayers": true,
			"UseLocalImagePull":     true,
			"Snapshotter":           SnapshotterOverlay,
			"PinnedImages":          map[string]string{"sandbox": "registry.k8s.io/pause:3.10"},
			"Registry.ConfigPath":   filepath.Join(confd, "hosts"),
		},
		pluginCRIRuntime: {
			"RestrictOOMScoreAdj":            true,
			"CniConfig.NetworkPluginBinDirs": []string{"/opt/cni/bin"},
			"CniConfig.NetworkPluginConfDir": "/etc/cni/net.d",
		},
		pluginNRI: {
			"Disable": true,
		},
	}

	for id, fields := range checks {
		section, ok := cfg.Plugins[id]
		if !ok {
			t.Errorf("no [plugins.%q] after loading", id)

			continue
		}

		data, err := toml.Marshal(section)
		if err != nil {
			t.Fatal(err)
		}

		// A fresh value of the plugin's config type: decoding into the
		// registration's own would change containerd's defaults for
		// other tests.
		v := reflect.New(reflect.TypeOf(regs[id].Config).Elem())
		strictDecode(t, id, data, v.Interface())

		for path, want := range fields {
			if got := field(v, path); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s = %v, want %v", id, path, got, want)
			}
		}
	}

	// The runc runtime table the base part adds merges into containerd's
	// default runtime, decoded as the daemon decodes it: onto a copy of
	// the defaults. It keeps its runtime type and passes the shim group
	// annotation through.
	rt := onDefaults(t, cfg, regs, pluginCRIRuntime)
	runc := rt.Elem().FieldByName("ContainerdConfig").FieldByName("Runtimes").MapIndex(reflect.ValueOf("runc"))

	if !runc.IsValid() {
		t.Fatalf("no runc runtime after loading")
	}

	if got := field(runc, "Type"); got != "io.containerd.runc.v2" {
		t.Errorf("runc runtime_type = %v, want containerd's default io.containerd.runc.v2", got)
	}

	if got := field(runc, "PodAnnotations"); !reflect.DeepEqual(got, []string{constants.ShimGroupAnnotation}) {
		t.Errorf("runc pod_annotations = %v, want [%s]", got, constants.ShimGroupAnnotation)
	}

	// The credentials are keyed by the host the CRI connects to.
	auth := field(reflect.ValueOf(decodeImages(t, cfg, regs)), "Registry.Configs")
	if got := fmt.Sprint(auth); !strings.Contains(got, "registry-1.docker.io") {
		t.Errorf("registry configs = %s", got)
	}
}

// onDefaults decodes a plugin's section as the daemon does, onto its
// default config; a copy, so other tests keep containerd's defaults.
func onDefaults(t *testing.T, cfg *srvconfig.Config, regs map[string]*plugin.Registration, id string) reflect.Value {
	t.Helper()

	defaults, err := toml.Marshal(regs[id].Config)
	if err != nil {
		t.Fatal(err)
	}

	v := reflect.New(reflect.TypeOf(regs[id].Config).Elem())
	if err := toml.Unmarshal(defaults, v.Interface()); err != nil {
		t.Fatal(err)
	}

	if _, err := cfg.Decode(context.Background(), id, v.Interface()); err != nil {
		t.Fatal(err)
	}

	return v
}

func decodeImages(t *testing.T, cfg *srvconfig.Config, regs map[string]*plugin.Registration) any {
	t.Helper()

	data, err := toml.Marshal(cfg.Plugins[pluginCRIImages])
	if err != nil {
		t.Fatal(err)
	}

	v := reflect.New(reflect.TypeOf(regs[pluginCRIImages].Config).Elem()).Interface()
	strictDecode(t, pluginCRIImages, data, v)

	return v
}

// loadAsContainerd loads a config as the daemon does: from defaults of
// its own config version, migrating older files with every plugin's
// migration, following imports.
func loadAsContainerd(t *testing.T, path string) *srvconfig.Config {
	t.Helper()

	regs := registry.Graph(func(*plugin.Registration) bool { return false })

	cfg := &srvconfig.Config{Version: version.ConfigVersion}
	if err := srvconfig.LoadConfigWithPlugins(context.Background(), path, func() iter.Seq[plugin.Registration] { return slices.Values(regs) }, cfg); err != nil {
		t.Fatal(err)
	}

	return cfg
}

// checkSockets checks where the daemon will listen. containerd 2.4 reads
// the sockets from its server plugins' sections (config version 4); our
// version 3 [grpc] address is migrated there, and the ttrpc socket next to
// it is derived from it, so the two instances never share a socket.
func checkSockets(t *testing.T, cfg *srvconfig.Config, grpc string) {
	t.Helper()

	for id, want := range map[string]string{
		"io.containerd.server.v1.grpc":  grpc,
		"io.containerd.server.v1.ttrpc": grpc + ".ttrpc",
	} {
		section, _ := cfg.Plugins[id].(map[string]any)
		if section["address"] != want {
			t.Errorf("[plugins.%q] = %v, want address %q", id, cfg.Plugins[id], want)
		}
	}
}

// The configs say version 3, as Talos's do; containerd must still accept
// that version (it migrates it at start).
func TestConfigVersionAccepted(t *testing.T) {
	t.Parallel()

	for name, data := range map[string][]byte{
		"system": SystemConfig(InstanceOptions{}),
		"cri":    CRIConfig(InstanceOptions{}),
		"base":   BasePart(BaseOptions{}),
	} {
		var c srvconfig.Config
		if err := toml.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}

		if c.Version != configVersion || c.Version > version.ConfigVersion {
			t.Errorf("%s: version %d, containerd reads up to %d", name, c.Version, version.ConfigVersion)
		}
	}
}
