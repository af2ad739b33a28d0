//go:build e2e

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Where a Docker node keeps EPHEMERAL (machine.files land under it) and
// the CRI's files (it owns its root: Talos's paths).
const (
	dockerEphemeral = "/var/lib/talosbox/ephemeral"
	criPart         = "/etc/cri/conf.d/20-customization.part"
	criMerged       = "/etc/cri/conf.d/cri.toml"
	criHostsDir     = "/system/etc/cri/conf.d/hosts"
)

// criWrongTypes are CRI parts that are TOML, merge, and that containerd
// 2.4 refuses to decode (it would not start), with the key the refusal
// names: the six testers sent, or of their kind.
var criWrongTypes = []struct{ part, key string }{
	{`version = "three"`, "version"},
	{"[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\npod_annotations = \"oops\"",
		`plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.pod_annotations`},
	{"[plugins.\"io.containerd.cri.v1.runtime\".cni]\nbin_dirs = \"/opt/cni/bin\"", `plugins."io.containerd.cri.v1.runtime".cni.bin_dirs`},
	{"[plugins.\"io.containerd.cri.v1.images\"]\nmax_concurrent_downloads = \"3\"", `plugins."io.containerd.cri.v1.images".max_concurrent_downloads`},
	{"[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.privileged_without_host_devices]\nall = true",
		`plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.privileged_without_host_devices`},
	{"[plugins.\"io.containerd.cri.v1.images\"]\nsnapshotter = 1", `plugins."io.containerd.cri.v1.images".snapshotter`},
}

// criBaseRuntimeSpecMissing decodes, so validation and containerd's
// start accept it, but the CRI runtime plugin refuses it as it loads
// (the file is not there): containerd serves on without a CRI.
const criBaseRuntimeSpecMissing = "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\nbase_runtime_spec = \"/var/tb/no-such-spec.json\""

// filesPatch is a machine.files patch (JSON: TOML has quotes and newlines).
func filesPatch(files ...[3]string) string {
	var b strings.Builder

	b.WriteString(`[{"op": "add", "path": "/machine/files", "value": [`)

	for i, f := range files {
		if i > 0 {
			b.WriteString(", ")
		}

		fmt.Fprintf(&b, `{"path": %q, "op": %q, "content": %q}`, f[0], f[1], f[2])
	}

	b.WriteString(`]}]`)

	return b.String()
}

// absent asserts that talosctl read finds no file at p.
func (f *fallbackNode) absent(p string) {
	f.t.Helper()

	if out, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "read", p); code == 0 {
		f.t.Errorf("%s is there:\n%s", p, out)
	}
}

// criHealthy waits until the CRI service is up and healthy.
func (f *fallbackNode) criHealthy() {
	f.t.Helper()

	eventually(f.t, time.Minute, func() error {
		out, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "service", "cri")
		if code != 0 || !regexpLine(out, `^STATE\s+Running\s*$`) || !regexpLine(out, `^HEALTH\s+OK\s*$`) {
			return fmt.Errorf("cri is not running and healthy:\n%s", out)
		}

		return nil
	})
}

// mkdirEphemeral makes a directory under the node's EPHEMERAL from outside,
// as something other than a config would: in the way of a file there.
func (f *fallbackNode) mkdirEphemeral(rel string) {
	f.t.Helper()

	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: rel + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		f.t.Fatal(err)
	}

	if err := tw.WriteHeader(&tar.Header{Name: rel + "/in-the-way", Typeflag: tar.TypeReg, Mode: 0o644}); err != nil {
		f.t.Fatal(err)
	}

	if err := tw.Close(); err != nil {
		f.t.Fatal(err)
	}

	if _, err := f.dc.docker.CopyToContainer(context.Background(), f.container, client.CopyToContainerOptions{DestinationPath: dockerEphemeral, Content: &buf}); err != nil {
		f.t.Fatal(err)
	}
}

// applyReboot applies cfg with a reboot and waits until it runs as the
// last good config.
func (f *fallbackNode) applyReboot(name string, cfg []byte) {
	f.t.Helper()

	f.ok("apply-config", "--mode", "reboot", "-f", f.file(name, cfg))

	eventually(f.t, 3*time.Minute, func() error {
		got, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "read", dockerState+"/config.yaml.last-good")
		if code != 0 || got != string(cfg) || !f.running() {
			return errors.New("the new config is not the last good one, running, yet")
		}

		return nil
	})
}

// testCRISafety: no config breaks the node's CRI for good. good is the
// node's running (last good) config; the node has fallen back before
// times already.
func testCRISafety(t *testing.T, f *fallbackNode, good []byte, before int) {
	modes := []string{"auto", "no-reboot", "reboot", "staged", "try"}

	t.Run("CRI parts containerd refuses: refused in every mode, nothing written", func(t *testing.T) {
		f := *f
		f.t = t
		start := time.Now()

		for i, c := range criWrongTypes {
			bad := patched(t, good, filesPatch([3]string{criPart, "create", c.part + "\n"}))
			p := f.file(fmt.Sprintf("wrong-type-%d.yaml", i), bad)
			want := criPart + ": " + c.key + ": containerd refuses it: "

			if out, code := f.dc.talosctl("validate", "-m", "container", "-c", p); code == 0 || !strings.Contains(out, want) {
				t.Errorf("talosctl validate of %q (exit %d) lacks %q:\n%s", c.part, code, want, out)
			}

			for _, mode := range modes {
				out, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "apply-config", "--mode", mode, "-f", p)
				if code == 0 || !strings.Contains(out, want) {
					t.Errorf("apply-config --mode %s of %q (exit %d) lacks %q:\n%s", mode, c.part, code, want, out)
				}
			}
		}

		t.Logf("%d parts refused by validate and in %d modes: %s", len(criWrongTypes), len(modes), time.Since(start).Round(100*time.Millisecond))

		if got := f.read("config.yaml"); got != string(good) {
			t.Errorf("config.yaml changed:\n%s", got)
		}

		f.absent(criPart)

		if got := f.ok("read", criMerged); strings.Contains(got, criPart) || strings.Contains(got, "oops") {
			t.Errorf("cri.toml has a refused part:\n%s", got)
		}

		if got := f.fallbacks(); got != before {
			t.Errorf("%d fallbacks, was %d", got, before)
		}
	})

	// machine.files the CRI reads, and one it does not.
	withCRI := patched(t, good, filesPatch(
		[3]string{criPart, "create", "[plugins.\"io.containerd.cri.v1.images\"]\nimage_pull_progress_timeout = \"7m\"\n"},
		[3]string{"/etc/cri/conf.d/hosts/reg.example_5000_/hosts.toml", "create", "server = \"https://reg.example:5000\"\n"},
		[3]string{"/var/tb/extra", "create", "extra\n"},
	))

	t.Run("a CRI part and a hosts.toml: where this node's containerd reads them", func(t *testing.T) {
		f := *f
		f.t = t
		start := time.Now()

		f.applyReboot("with-cri.yaml", withCRI)
		t.Logf("reboot into the config: %s", time.Since(start).Round(100*time.Millisecond))

		if got := f.ok("read", criMerged); !strings.Contains(got, "## 20-customization.part") || !strings.Contains(got, "image_pull_progress_timeout = '7m'") {
			t.Errorf("the node's cri.toml lacks the part:\n%s", got)
		}

		if got := f.ok("read", criHostsDir+"/reg.example_5000_/hosts.toml"); got != "server = \"https://reg.example:5000\"\n" {
			t.Errorf("hosts.toml in containerd's config_path: %q", got)
		}

		if got := f.ok("read", dockerEphemeral+"/var/tb/extra"); got != "extra\n" {
			t.Errorf("/var/tb/extra: %q", got)
		}

		f.criHealthy()
	})

	t.Run("a CRI part that fails containerd at load: refused live, the boot check falls back in the other modes", func(t *testing.T) {
		f := *f
		f.t = t
		bad := patched(t, good, filesPatch(
			[3]string{criPart, "create", criBaseRuntimeSpecMissing + "\n"},
			[3]string{"/var/tb/bad", "create", "bad\n"},
		))
		p := f.file("load-fails.yaml", bad)

		for _, mode := range []string{"no-reboot", "try"} {
			if out, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "apply-config", "--mode", mode, "-f", p); code == 0 || !strings.Contains(out, "changes cannot be applied without a reboot") {
				t.Errorf("apply-config --mode %s (exit %d):\n%s", mode, code, out)
			}
		}

		n := f.fallbacks()

		for _, mode := range []string{"auto", "reboot", "staged"} {
			start := time.Now()
			f.ok("apply-config", "--mode", mode, "-f", p)

			if mode == "staged" {
				f.ok("reboot")
			}

			n++

			// The API is down while the node reboots.
			eventually(t, 3*time.Minute, func() error {
				out, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "logs", "machined")
				if got := strings.Count(out, "[talos] config fallback: kept the failed config as "); code != 0 || got < n {
					return fmt.Errorf("%d fallbacks (exit %d), waiting for %d", got, code, n)
				}

				return nil
			})

			rec := f.waitFallback("the CRI plugin io.containerd.cri.v1.runtime did not load")
			t.Logf("%s: from the apply to running on the last good config: %s", mode, time.Since(start).Round(100*time.Millisecond))
			f.check(withCRI, bad, rec, n)

			if !strings.Contains(rec, "task: startAllServices") || !strings.Contains(rec, "no-such-spec.json") {
				t.Errorf("the record does not say the CRI did not load:\n%s", rec)
			}

			// The last good config's files, exactly.
			if got := f.ok("read", criPart); !strings.Contains(got, "7m") {
				t.Errorf("%s after the fallback: %q", criPart, got)
			}

			if got := f.ok("read", criMerged); strings.Contains(got, "no-such-spec") {
				t.Errorf("cri.toml still has the failed part:\n%s", got)
			}

			f.absent(dockerEphemeral + "/var/tb/bad")
			f.ok("read", criHostsDir+"/reg.example_5000_/hosts.toml")
			f.criHealthy()
		}
	})

	t.Run("a config that drops the entries removes their files", func(t *testing.T) {
		f := *f
		f.t = t

		f.applyReboot("dropped.yaml", good)

		f.absent(criPart)
		f.absent(criHostsDir + "/reg.example_5000_")
		f.absent(dockerEphemeral + "/var/tb/extra")

		if got := f.ok("read", criMerged); strings.Contains(got, "20-customization.part") {
			t.Errorf("cri.toml still has the dropped part:\n%s", got)
		}

		f.criHealthy()
	})
}
