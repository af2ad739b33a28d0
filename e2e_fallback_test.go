//go:build e2e

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/configpatch"
)

// Where a Docker node keeps STATE (internal/provision.StateDir + /state).
const dockerState = "/var/lib/talosbox/state"

// fallbackNode is one Docker node a fallback test breaks and watches.
type fallbackNode struct {
	t         *testing.T
	dc        *dockerCluster
	ip        string
	container string
}

func (f *fallbackNode) ok(args ...string) string {
	f.t.Helper()
	return f.dc.ok(append([]string{"-n", f.ip, "-e", f.ip}, args...)...)
}

// read is a STATE file through the node's API, as an operator reads it.
func (f *fallbackNode) read(name string) string {
	f.t.Helper()
	return f.ok("read", dockerState+"/"+name)
}

// running says whether the node's stage is running (not ready: etcd is
// never bootstrapped here).
func (f *fallbackNode) running() bool {
	out, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "get", "machinestages")
	return code == 0 && regexpLine(out, `\srunning\s*$`)
}

// fallbacks counts the failed boots machined fell back from.
func (f *fallbackNode) fallbacks() int {
	f.t.Helper()
	return strings.Count(f.ok("logs", "machined"), "[talos] config fallback: kept the failed config as ")
}

// writeState puts a config into STATE past every check, through the
// container's state volume: what a bug in validation leaves there.
func (f *fallbackNode) writeState(cfg []byte) {
	f.t.Helper()

	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "config.yaml", Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(cfg))}); err != nil {
		f.t.Fatal(err)
	}

	if _, err := tw.Write(cfg); err != nil {
		f.t.Fatal(err)
	}

	if err := tw.Close(); err != nil {
		f.t.Fatal(err)
	}

	if _, err := f.dc.docker.CopyToContainer(context.Background(), f.container, client.CopyToContainerOptions{DestinationPath: dockerState, Content: &buf}); err != nil {
		f.t.Fatal(err)
	}
}

// file writes data into the test's dir for talosctl.
func (f *fallbackNode) file(name string, data []byte) string {
	f.t.Helper()

	p := filepath.Join(f.dc.dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		f.t.Fatal(err)
	}

	return p
}

func patched(t *testing.T, base []byte, patch string) []byte {
	t.Helper()

	ps, err := configpatch.Parse([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}

	out, err := configpatch.Apply(base, ps...)
	if err != nil {
		t.Fatal(err)
	}

	return out
}

// waitFallback waits until the node records a failed boot whose error
// holds want and runs again, and returns the record.
func (f *fallbackNode) waitFallback(want string) string {
	f.t.Helper()

	var rec string

	eventually(f.t, 3*time.Minute, func() error {
		out, code := f.dc.talosctl("-n", f.ip, "-e", f.ip, "get", "configloaderrors", "boot", "-o", "yaml")
		if code != 0 || !strings.Contains(out, want) {
			return fmt.Errorf("no failed boot recorded with %q yet: %s", want, out)
		}

		rec = out

		if !f.running() {
			return errors.New("not running yet")
		}

		return nil
	})

	return rec
}

// check asserts the node runs good with bad kept aside, after n
// fallbacks in all (one more than before: no loop).
func (f *fallbackNode) check(good, bad []byte, rec string, n int) {
	f.t.Helper()

	if got := f.read("config.yaml"); got != string(good) {
		f.t.Errorf("config.yaml is not the last good config:\n%s", got)
	}

	if got := f.read("config.yaml.failed"); got != string(bad) {
		f.t.Errorf("config.yaml.failed is not the failed config:\n%s", got)
	}

	if !strings.Contains(rec, "action: ") || !strings.Contains(rec, "the last good config") || !strings.Contains(rec, "failedConfigPath: "+dockerState+"/config.yaml.failed") {
		f.t.Errorf("the record does not say what the node did:\n%s", rec)
	}

	if got := f.fallbacks(); got != n {
		f.t.Errorf("%d fallbacks in the log, want %d", got, n)
	}
}

// TestDockerConfigFallback: a Docker node whose next config breaks its
// boot comes back on its last good config, whichever way the config got
// there (written to STATE past validation, staged, applied with a
// reboot) and whatever broke (a file where none may go, a directory in
// the way of a file, an env value the kernel refuses, a file whose parent
// is a file); that no CRI part breaks the node's CRI for good
// (testCRISafety); and a try that cuts the node off its clients reverts by
// itself.
func TestDockerConfigFallback(t *testing.T) {
	bin := buildBinary(t)
	dc := newDockerCluster(t, bin)

	dc.ok("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(), "--controlplanes", "1", "--workers", "0",
		"--memory", "512", "--skip-bootstrap", "--wait=false")

	f := &fallbackNode{t: t, dc: dc, ip: dc.ip(0), container: dc.name + "-controlplane-1"}

	eventually(t, 3*time.Minute, func() error {
		if !f.running() {
			return errors.New("not running yet")
		}

		return nil
	})

	good := []byte(f.read("config.yaml"))
	if got := f.read("config.yaml.last-good"); got != string(good) {
		t.Fatalf("the config that booted is not kept as the last good one:\n%s", got)
	}

	timeIt := func(what string, start time.Time) {
		t.Logf("%s: from the reboot to running on the last good config: %s", what, time.Since(start).Round(100*time.Millisecond))
	}

	t.Run("/etc/motd written to STATE, then a reboot", func(t *testing.T) {
		f := *f
		f.t = t
		bad := patched(t, good, `machine: {files: [{path: /etc/motd, content: "hello\n", op: create}]}`)

		f.writeState(bad)
		start := time.Now()
		f.ok("reboot")

		rec := f.waitFallback("/etc/motd")
		timeIt("/etc/motd", start)
		t.Logf("talosctl get configloaderrors boot -o yaml:\n%s", rec)
		f.check(good, bad, rec, 1)
	})

	// From here on the node's last good config writes /var/tb/d/f, so
	// /var/tb/d is a directory and /var/tb/d/f a file on the node.
	withFile := patched(t, good, `machine: {files: [{path: /var/tb/d/f, content: x, op: create}]}`)

	t.Run("reboot mode into a config that boots", func(t *testing.T) {
		out := dc.ok("-n", f.ip, "-e", f.ip, "apply-config", "--mode", "reboot", "-f", f.file("with-file.yaml", withFile))
		t.Log(out)

		eventually(t, 3*time.Minute, func() error {
			got, code := dc.talosctl("-n", f.ip, "-e", f.ip, "read", dockerState+"/config.yaml.last-good")
			if code != 0 || got != string(withFile) || !f.running() {
				return fmt.Errorf("the new config is not the last good one, running, yet")
			}

			return nil
		})
	})

	before := f.fallbacks()

	t.Run("staged: a directory in the way of a file", func(t *testing.T) {
		f := *f
		f.t = t
		// Not a config's directory (one a config made goes with it when
		// the config drops its file).
		f.mkdirEphemeral("var/tb/stray")
		bad := patched(t, good, `machine: {files: [{path: /var/tb/stray, content: y, op: overwrite}]}`)

		f.ok("apply-config", "--mode", "staged", "-f", f.file("dir.yaml", bad))
		start := time.Now()
		f.ok("reboot")

		rec := f.waitFallback("/var/tb/stray")
		timeIt("directory in the way (staged)", start)
		f.check(withFile, bad, rec, before+1)

		if !strings.Contains(rec, "task: writeUserFiles") || !strings.Contains(rec, "phase: userSetup") {
			t.Errorf("the record does not name the task:\n%s", rec)
		}
	})

	t.Run("an env value the kernel refuses, written to STATE", func(t *testing.T) {
		f := *f
		f.t = t
		bad := patched(t, withFile, `machine: {env: {TB_FALLBACK_OK: "1", TB_FALLBACK_NUL: "a\0b"}}`)

		f.writeState(bad)
		start := time.Now()
		f.ok("reboot")

		rec := f.waitFallback("TB_FALLBACK_NUL")
		timeIt("env refused", start)
		f.check(withFile, bad, rec, before+2)
	})

	t.Run("reboot mode: a file whose parent is a file", func(t *testing.T) {
		f := *f
		f.t = t
		// A file no config wrote (mkdirEphemeral leaves one in its
		// directory): a config's own would go first.
		f.mkdirEphemeral("var/tb/stray2")
		bad := patched(t, good, `machine: {files: [{path: /var/tb/stray2/in-the-way/g, content: z, op: create}]}`)

		start := time.Now()
		f.ok("apply-config", "--mode", "reboot", "-f", f.file("parent.yaml", bad))

		rec := f.waitFallback("/var/tb/stray2/in-the-way/g")
		timeIt("parent is a file (reboot mode)", start)
		f.check(withFile, bad, rec, before+3)
	})

	t.Run("a plain reboot boots the last good config, no fallback", func(t *testing.T) {
		n := f.fallbacks()
		f.ok("reboot", "--wait")

		if got := f.fallbacks(); got != n {
			t.Fatalf("a reboot after the fallbacks fell back again (%d, was %d)", got, n)
		}

		if got := f.read("config.yaml"); got != string(withFile) {
			t.Fatalf("config.yaml after a reboot:\n%s", got)
		}
	})

	t.Run("CRI", func(t *testing.T) {
		start := time.Now()
		testCRISafety(t, f, withFile, f.fallbacks())
		t.Logf("the CRI subtests took %s", time.Since(start).Round(time.Second))
	})

	t.Run("try with a machine.ca its clients do not trust reverts by itself", func(t *testing.T) {
		testTryNewCA(t, dc, f.ip, f.read("config.yaml"))
	})
}

// testTryNewCA applies, in try mode, cur with another cluster's OS CA:
// the node's API then presents a certificate its clients do not trust,
// so no client can confirm or undo the try. The node reverts by itself
// when the timeout passes.
func testTryNewCA(t *testing.T, dc *dockerCluster, ip, cur string) {
	other := t.TempDir()
	if out, err := exec.Command(dc.bin, "talosctl", "gen", "config", "other", "https://10.9.9.9:6443", "-o", other).CombinedOutput(); err != nil {
		t.Fatalf("gen config: %v\n%s", err, out)
	}

	raw, err := os.ReadFile(filepath.Join(other, "controlplane.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	var doc struct {
		Machine struct {
			CA struct {
				Crt string `yaml:"crt"`
				Key string `yaml:"key"`
			} `yaml:"ca"`
		} `yaml:"machine"`
	}

	if err := yaml.Unmarshal(raw, &doc); err != nil || doc.Machine.CA.Crt == "" {
		t.Fatalf("the other cluster's machine.ca: %v", err)
	}

	// The node cuts its clients off within a fraction of a second of the
	// apply: a short try is enough to see both sides of it.
	const timeout = 10 * time.Second

	try := patched(t, []byte(cur), fmt.Sprintf(`[{"op": "replace", "path": "/machine/ca", "value": {"crt": %q, "key": %q}}]`, doc.Machine.CA.Crt, doc.Machine.CA.Key))
	path := filepath.Join(dc.dir, "try-ca.yaml")

	if err := os.WriteFile(path, try, 0o600); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	dc.ok("-n", ip, "-e", ip, "apply-config", "--mode", "try", "--timeout", timeout.String(), "-f", path)

	answers := func() bool {
		_, code := dc.talosctl("-n", ip, "-e", ip, "version")
		return code == 0
	}

	eventually(t, timeout, func() error {
		if answers() {
			return errors.New("the node still answers clients of the old CA")
		}

		return nil
	})

	cut := time.Since(start)

	eventually(t, timeout+time.Minute, func() error {
		if !answers() {
			return errors.New("the node does not answer clients of the old CA yet")
		}

		return nil
	})

	back := time.Since(start)
	t.Logf("try with a new machine.ca: clients cut off after %s, served again after %s (timeout %s)", cut.Round(100*time.Millisecond), back.Round(100*time.Millisecond), timeout)

	if back < timeout-2*time.Second {
		t.Errorf("served again after %s, before the try's timeout of %s: not the node's revert", back, timeout)
	}

	if out := dc.ok("-n", ip, "-e", ip, "get", "mc", "v1alpha1", "-o", "yaml"); strings.Contains(out, doc.Machine.CA.Crt[len(doc.Machine.CA.Crt)-64:]) {
		t.Errorf("the active config still has the tried machine.ca")
	}

	if got := dc.ok("-n", ip, "-e", ip, "read", dockerState+"/config.yaml"); got != cur {
		t.Errorf("the try changed STATE's config")
	}
}
