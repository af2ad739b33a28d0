package validation_test

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	srvconfig "github.com/containerd/containerd/v2/cmd/containerd/server/config"
	"github.com/containerd/containerd/v2/plugins"
	"github.com/containerd/containerd/v2/version"
	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"
	"github.com/pelletier/go-toml/v2"

	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/cri/validation"
)

const partFile = "/etc/cri/conf.d/20-customization.part"

// nodeParts are a node's own parts, and the user's after them.
func nodeParts(t *testing.T, user string) []cri.Part {
	t.Helper()

	reg, err := cri.RegistriesPart(nil, "/system/etc/cri/conf.d/hosts")
	if err != nil {
		t.Fatal(err)
	}

	parts := []cri.Part{
		{Name: cri.BasePartName, Data: cri.BasePart(cri.BaseOptions{CNIBinDirs: []string{"/opt/cni/bin"}, CNIConfDir: "/etc/cni/net.d", SandboxImage: "registry.k8s.io/pause:3.10", NoPivotRoot: true})},
		{Name: cri.RegistriesPartName, Data: reg},
	}

	if user != "" {
		parts = append(parts, cri.Part{Name: cri.CustomizationPartName, Data: []byte(user)})
	}

	return parts
}

// The wrongly typed parts testers sent, and more of the kind: each TOML
// that parses, merges, and that containerd 2.4 refuses to decode (it does
// not start).
var wrongTypes = []struct {
	name, part string
	key        string // the full key the error names
}{
	{"version as a string", "version = \"three\"\n", "version"},
	{"pod_annotations as a string", "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\npod_annotations = \"oops\"\n",
		`plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.pod_annotations`},
	{"cni bin_dirs as a string", "[plugins.\"io.containerd.cri.v1.runtime\".cni]\nbin_dirs = \"/opt/cni/bin\"\n",
		`plugins."io.containerd.cri.v1.runtime".cni.bin_dirs`},
	{"max_concurrent_downloads as a string", "[plugins.\"io.containerd.cri.v1.images\"]\nmax_concurrent_downloads = \"3\"\n",
		`plugins."io.containerd.cri.v1.images".max_concurrent_downloads`},
	{"privileged_without_host_devices as a table", "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.privileged_without_host_devices]\nall = true\n",
		`plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.privileged_without_host_devices`},
	{"snapshotter as an integer", "[plugins.\"io.containerd.cri.v1.images\"]\nsnapshotter = 1\n",
		`plugins."io.containerd.cri.v1.images".snapshotter`},
}

func TestWrongTypesRefused(t *testing.T) {
	t.Parallel()

	for _, tc := range wrongTypes {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			_, err := cri.MergeChecked(nodeParts(t, tc.part), "/etc/cri/conf.d")

			ve, ok := errors.AsType[*validation.Error](err)
			if !ok {
				t.Fatalf("error = %v, want a *validation.Error", err)
			}

			if ve.Part != partFile || validation.FormatKey(ve.Key) != tc.key {
				t.Errorf("blames %s at %s, want %s at %s", ve.Part, validation.FormatKey(ve.Key), partFile, tc.key)
			}

			msg := err.Error()
			for _, want := range []string{partFile + ": " + tc.key + ": containerd refuses it: cannot "} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}

			// containerd itself refuses the same file, the daemon's way.
			if err := loadAsContainerd(t, merge(t, nodeParts(t, tc.part))); err == nil {
				t.Errorf("containerd loads what validation refused")
			}
		})
	}
}

// What the CRI plugins refuse as they load: containerd starts, the CRI
// does not.
func TestLoadChecks(t *testing.T) {
	t.Parallel()

	const rt = `[plugins."io.containerd.cri.v1.runtime"`

	for _, tc := range []struct{ name, part, key, msg string }{
		{"default runtime that does not exist", rt + ".containerd]\ndefault_runtime_name = \"kata\"\n",
			`plugins."io.containerd.cri.v1.runtime".containerd.default_runtime_name`, `no runtime "kata" in containerd.runtimes (there are: ["runc"])`},
		{"all devices without privileged_without_host_devices", rt + ".containerd.runtimes.runc]\nprivileged_without_host_devices_all_devices_allowed = true\n",
			`plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.privileged_without_host_devices_all_devices_allowed`, "requires privileged_without_host_devices = true"},
		{"io_type", rt + ".containerd.runtimes.runc]\nio_type = \"pipe\"\n",
			`plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.io_type`, "io_type can only be streaming or named_pipe"},
		{"a duration that does not parse", rt + "]\nstats_collect_period = \"often\"\n",
			`plugins."io.containerd.cri.v1.runtime".stats_collect_period`, `invalid duration "often"`},
		{"mirrors beside the node's config_path", "[plugins.\"io.containerd.cri.v1.images\".registry.mirrors.\"docker.io\"]\nendpoint = [\"https://m.example\"]\n",
			`plugins."io.containerd.cri.v1.images".registry.mirrors`, "mirrors cannot be set when config_path is"},
		{"the CRI disabled", "disabled_plugins = [\"io.containerd.cri.v1.images\"]\n", "disabled_plugins", "without which the node runs no pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			_, err := cri.MergeChecked(nodeParts(t, tc.part), "/etc/cri/conf.d")

			ve, ok := errors.AsType[*validation.Error](err)
			if !ok {
				t.Fatalf("error = %v, want a *validation.Error", err)
			}

			if ve.Part != partFile || validation.FormatKey(ve.Key) != tc.key || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error = %v, want %s at %s: %s", err, partFile, tc.key, tc.msg)
			}

			// containerd decodes it: the refusal is the plugin's, later.
			if err := loadAsContainerd(t, merge(t, nodeParts(t, tc.part))); err != nil {
				t.Errorf("containerd refuses to decode it already: %v", err)
			}
		})
	}
}

func TestGoodParts(t *testing.T) {
	t.Parallel()

	for name, part := range map[string]string{
		"none": "",
		"another runtime, made the default": `[plugins."io.containerd.cri.v1.runtime".containerd]
default_runtime_name = "crun"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun]
runtime_type = "io.containerd.runc.v2"
pod_annotations = ["example.com/*"]
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun.options]
BinaryName = "/usr/bin/crun"
`,
		"images settings":                          "[plugins.\"io.containerd.cri.v1.images\"]\nmax_concurrent_downloads = 5\nimage_pull_progress_timeout = \"2m\"\n",
		"cni bin_dirs as a list (concatenated)":    "[plugins.\"io.containerd.cri.v1.runtime\".cni]\nbin_dirs = [\"/var/cni/bin\"]\n",
		"an unknown key, which containerd ignores": "[plugins.\"io.containerd.cri.v1.runtime\"]\nno_such_key = 1\n",
		"a plugin containerd does not have":        "[plugins.\"io.example.none\"]\nx = \"y\"\n",
		// TestMetalNodeRunsContainers's: the CRI over TCP.
		"a top-level table and the grpc CRI plugin's": "[grpc]\n  tcp_address = \"0.0.0.0:3000\"\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  disable_tcp_service = false\n",
		"a base_runtime_spec (checked on the node)":   "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\nbase_runtime_spec = \"/nonexistent/spec.json\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			merged, err := cri.MergeChecked(nodeParts(t, part), "/etc/cri/conf.d")
			if err != nil {
				t.Fatal(err)
			}

			if err := loadAsContainerd(t, merged); err != nil {
				t.Errorf("containerd refuses what validation let through: %v", err)
			}
		})
	}
}

func merge(t *testing.T, parts []cri.Part) []byte {
	t.Helper()

	merged, _, err := cri.MergePartData(parts)
	if err != nil {
		t.Fatal(err)
	}

	return merged
}

// loadAsContainerd is the daemon's own load of the CRI instance: the main
// config importing the merged cri.toml from files, then each plugin's
// section decoded onto its defaults.
func loadAsContainerd(t *testing.T, merged []byte) error {
	t.Helper()

	dir := t.TempDir()
	criToml := filepath.Join(dir, "cri.toml")
	main := filepath.Join(dir, "containerd.toml")

	for p, data := range map[string][]byte{
		criToml: merged,
		main:    cri.CRIConfig(cri.InstanceOptions{Root: dir + "/root", State: dir + "/state", Socket: dir + "/c.sock", Imports: []string{criToml}}),
	} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	regs := registry.Graph(func(*plugin.Registration) bool { return false })
	cfg := &srvconfig.Config{Version: version.ConfigVersion}

	if err := srvconfig.LoadConfigWithPlugins(context.Background(), main, func() iter.Seq[plugin.Registration] { return slices.Values(regs) }, cfg); err != nil {
		return err
	}

	for _, r := range regs {
		if r.Config == nil || slices.Contains(cfg.DisabledPlugins, r.URI()) {
			continue
		}

		if _, err := cfg.Decode(context.Background(), r.URI(), validationDefaults(r.Config)); err != nil {
			return err
		}
	}

	return nil
}

// validationDefaults is a fresh copy of a plugin's defaults, as the
// daemon decodes onto.
func validationDefaults(config any) any {
	v := reflect.New(reflect.TypeOf(config).Elem())

	if data, err := toml.Marshal(config); err == nil {
		_ = toml.Unmarshal(data, v.Interface())
	}

	return v.Interface()
}

// TestRuntimeInitAgrees runs the CRI runtime plugin's own init (what the
// daemon runs as it loads it) on parts: it refuses what validation's load
// checks refuse, and a base_runtime_spec that is not there, which only
// the node can tell (the CRI health check reports it there).
func TestRuntimeInitAgrees(t *testing.T) {
	t.Parallel()

	const rt = `[plugins."io.containerd.cri.v1.runtime"`

	for _, tc := range []struct {
		name, part string
		validated  bool // validation refuses it too
	}{
		{"default runtime that does not exist", rt + ".containerd]\ndefault_runtime_name = \"kata\"\n", true},
		{"io_type", rt + ".containerd.runtimes.runc]\nio_type = \"pipe\"\n", true},
		{"all devices without privileged_without_host_devices", rt + ".containerd.runtimes.runc]\nprivileged_without_host_devices_all_devices_allowed = true\n", true},
		{"stats_collect_period", rt + "]\nstats_collect_period = \"often\"\n", true},
		{"base_runtime_spec not there", rt + ".containerd.runtimes.runc]\nbase_runtime_spec = \"/nonexistent/spec.json\"\n", false},
		{"good", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			merged := merge(t, nodeParts(t, tc.part))

			_, verr := cri.MergeChecked(nodeParts(t, tc.part), "/etc/cri/conf.d")
			if (verr != nil) != tc.validated {
				t.Errorf("validation: %v, want refused: %v", verr, tc.validated)
			}

			ierr := initRuntime(t, merged)
			if (ierr != nil) != (tc.part != "") {
				t.Errorf("the runtime plugin's init: %v, want refused: %v", ierr, tc.part != "")
			}

			t.Logf("validation: %v; containerd: %v", verr, ierr)
		})
	}
}

// initRuntime decodes the runtime plugin's section as the daemon does and
// runs the plugin's InitFn with directories of the test's.
func initRuntime(t *testing.T, merged []byte) error {
	t.Helper()

	var reg plugin.Registration

	for _, r := range registry.Graph(func(*plugin.Registration) bool { return false }) {
		if r.URI() == validation.PluginCRIRuntime {
			reg = r
		}
	}

	cfg := &srvconfig.Config{}
	if err := toml.Unmarshal(merged, cfg); err != nil {
		t.Fatal(err)
	}

	conf := validationDefaults(reg.Config)
	if _, err := cfg.Decode(context.Background(), reg.URI(), conf); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	ic := plugin.NewContext(context.Background(), plugin.NewPluginSet(), map[string]string{
		plugins.PropertyRootDir:  filepath.Join(dir, "root", reg.URI()),
		plugins.PropertyStateDir: filepath.Join(dir, "state", reg.URI()),
	})
	ic.Config = conf

	_, err := reg.InitFn(ic)

	return err
}
