package cri

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/platform"
)

func withFiles(files ...configs.MachineFile) *configs.Config {
	return &configs.Config{Machine: &configs.MachineConfig{Files: files}}
}

func read(t *testing.T, p string) string {
	t.Helper()

	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}

	return string(data)
}

func gone(t *testing.T, p string) {
	t.Helper()

	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there (%v)", p, err)
	}
}

// The CRI renders the machine.files it owns from the config at hand:
// where its containerd reads them, gone with the config that wrote them,
// and nothing written at all for a config containerd would refuse.
func TestRenderOwnsMachineFiles(t *testing.T) {
	t.Parallel()

	rt := NewRuntime(platform.Platform{Name: platform.Container, EphemeralDir: t.TempDir()})
	c := NewContainerd(ContainerdOptions{Runtime: rt, OOMScoreAdjPath: "-"})

	part := filepath.Join(rt.CRIConfDir, CustomizationPartName)
	hosts := filepath.Join(rt.HostsDir, "reg.example", "hosts.toml")
	merged := filepath.Join(rt.CRIConfDir, "cri.toml")

	good := withFiles(
		configs.MachineFile{Path: CustomizationPartPath, Op: "create", Content: "[plugins.\"io.containerd.cri.v1.images\"]\nmax_concurrent_downloads = 5\n"},
		configs.MachineFile{Path: "/etc/cri/conf.d/hosts/reg.example/hosts.toml", Op: "create", Content: "server = \"https://reg.example\"\n"},
	)

	if err := c.Render(good); err != nil {
		t.Fatal(err)
	}

	if got := read(t, part); !strings.Contains(got, "max_concurrent_downloads = 5") {
		t.Errorf("%s = %q", part, got)
	}

	if got := read(t, merged); !strings.Contains(got, "max_concurrent_downloads = 5") || !strings.Contains(got, "## "+CustomizationPartName) {
		t.Errorf("cri.toml lacks the part:\n%s", got)
	}

	if got := read(t, hosts); got != "server = \"https://reg.example\"\n" {
		t.Errorf("%s = %q", hosts, got)
	}

	before := read(t, merged)

	// pod_annotations as a string: containerd would not start.
	bad := withFiles(configs.MachineFile{Path: CustomizationPartPath, Op: "create", Content: "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\npod_annotations = \"oops\"\n"})

	err := c.Render(bad)
	if err == nil || !strings.Contains(err.Error(), part+`: plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.pod_annotations: containerd refuses it`) {
		t.Fatalf("Render = %v, want the part and the key refused", err)
	}

	if got := read(t, merged); got != before {
		t.Errorf("cri.toml changed by a refused render:\n%s", got)
	}

	if got := read(t, part); !strings.Contains(got, "max_concurrent_downloads") {
		t.Errorf("the refused part was written: %q", got)
	}

	// A config without them: both gone, and the merge without the part.
	if err := c.Render(withFiles()); err != nil {
		t.Fatal(err)
	}

	gone(t, part)
	gone(t, hosts)
	gone(t, filepath.Dir(hosts))

	if got := read(t, merged); strings.Contains(got, CustomizationPartName) || strings.Contains(got, "max_concurrent_downloads") {
		t.Errorf("cri.toml still has the dropped part:\n%s", got)
	}
}

// A part the node's image ships merges in, and is checked with the rest.
func TestRenderOtherParts(t *testing.T) {
	t.Parallel()

	rt := NewRuntime(platform.Platform{Name: platform.Container, EphemeralDir: t.TempDir()})
	c := NewContainerd(ContainerdOptions{Runtime: rt, OOMScoreAdjPath: "-"})

	if err := os.MkdirAll(rt.CRIConfDir, 0o755); err != nil {
		t.Fatal(err)
	}

	ext := filepath.Join(rt.CRIConfDir, "10-extension.part")
	if err := os.WriteFile(ext, []byte("[plugins.\"io.containerd.cri.v1.runtime\".cni]\nbin_dirs = \"/opt/ext\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	if err := c.Render(withFiles()); err == nil || !strings.Contains(err.Error(), ext+`: plugins."io.containerd.cri.v1.runtime".cni.bin_dirs`) {
		t.Fatalf("Render = %v, want the extension's part refused", err)
	}

	if err := os.WriteFile(ext, []byte("[plugins.\"io.containerd.cri.v1.runtime\".cni]\nbin_dirs = [\"/opt/ext\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	if err := c.Render(withFiles()); err != nil {
		t.Fatal(err)
	}

	if got := read(t, filepath.Join(rt.CRIConfDir, "cri.toml")); !strings.Contains(got, "/opt/ext") {
		t.Errorf("cri.toml lacks the extension's part:\n%s", got)
	}
}
