//go:build e2e

package metaltest

// A metal node's CRI survives every config: parts containerd would refuse
// are refused as they are applied, whatever the mode, and a part that
// passes validation but stops the CRI plugin from loading fails the
// boot's check, which falls back to the last good config and its files
// (part of TestMetalLifecycle's configFallback).

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

const criPart = "/etc/cri/conf.d/20-customization.part"

// criWrongTypes are TOML that merges and that containerd 2.4 refuses to
// decode, with the key validation names (as in the root package's
// e2e_fallback_cri_test.go).
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

// filesPatch is a JSON patch that sets machine.files.
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
func (n *node) absent(p string) {
	n.t.Helper()

	if out, _, err := n.talosctl("read", p); err == nil {
		n.t.Errorf("%s is there:\n%s", p, out)
	}
}

var (
	criRunning = regexp.MustCompile(`(?m)^STATE\s+Running\s*$`)
	criHealthy = regexp.MustCompile(`(?m)^HEALTH\s+OK\s*$`)
)

// criHealthy waits until the CRI service runs and is healthy.
func (n *node) criHealthy() {
	n.t.Helper()

	n.until("cri healthy", servicesTimeout, func() error {
		out, errOut, err := n.talosctl("service", "cri")
		if err != nil {
			return fmt.Errorf("%w: %s", err, errOut)
		}

		if !criRunning.MatchString(out) || !criHealthy.MatchString(out) {
			return fmt.Errorf("cri is not Running and healthy yet:\n%s", out)
		}

		return nil
	})
}

// criRefusals applies each wrongly typed part in every mode: each is
// refused naming the part and the key, and nothing changes on the node.
func (n *node) criRefusals(cp string) {
	n.t.Helper()

	good, err := os.ReadFile(cp)
	if err != nil {
		n.t.Fatal(err)
	}

	start := time.Now()

	for i, c := range criWrongTypes {
		p := n.patchConfig(cp, fmt.Sprintf("wrong-type-%d.yaml", i), filesPatch([3]string{criPart, "create", c.part + "\n"}))
		want := criPart + ": " + c.key + ": containerd refuses it: "

		for _, mode := range []string{"auto", "no-reboot", "reboot", "staged", "try"} {
			if _, errOut, err := n.talosctl("apply-config", "--mode", mode, "-f", p); err == nil || !strings.Contains(errOut, want) {
				n.t.Errorf("apply-config --mode %s of %q: %v, want %q:\n%s", mode, c.part, err, want, errOut)
			}
		}
	}

	n.t.Logf("%d wrongly typed CRI parts refused in 5 modes: %s", len(criWrongTypes), time.Since(start).Round(100*time.Millisecond))

	if got := n.ok("read", "/system/state/config.yaml"); got != string(good) {
		n.t.Errorf("config.yaml changed by refused applies:\n%s", got)
	}

	n.absent(criPart)

	if strings.Contains(n.console(), markRebooting) {
		n.t.Errorf("a refused apply rebooted the node")
	}
}

// criLoadFallback applies, with a reboot, a part containerd decodes but
// its CRI runtime plugin refuses as it loads (a base_runtime_spec that is
// not there), with a file under /var: the CRI's health check fails the
// boot, the node falls back and reboots, and comes up on its last good
// config (cp) with that config's files only and a healthy CRI.
func (n *node) criLoadFallback(cp string) {
	n.t.Helper()

	good, err := os.ReadFile(cp)
	if err != nil {
		n.t.Fatal(err)
	}

	bad := n.patchConfig(cp, "cri-load.yaml", filesPatch(
		[3]string{criPart, "create", "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\nbase_runtime_spec = \"/var/tb-no-such-spec.json\"\n"},
		[3]string{"/var/tb-bad/f", "create", "bad\n"},
	))

	start := time.Now()

	n.ok("apply-config", "--mode", "reboot", "-f", bad)
	n.waitExit(markRebooting)

	n.boot()
	n.wait("[talos] writing 1 machine file(s) under /", bootTimeout)
	n.wait(markKeptFailed, servicesTimeout)
	n.wait(markFallbackReboot, servicesTimeout)
	n.waitExit(markRebooting)

	n.boot()
	n.wait("[talos] machine files removed (the config no longer writes them): /var/tb-bad/f", bootTimeout)
	n.wait(markServices, servicesTimeout)
	n.t.Logf("a CRI part that fails at load: from the apply to services up on the last good config: %s", time.Since(start).Round(time.Second))

	rec := n.ok("get", "configloaderrors", "boot", "-o", "yaml")
	for _, want := range []string{"the CRI plugin io.containerd.cri.v1.runtime did not load", "/var/tb-no-such-spec.json", "task: startAllServices"} {
		if !strings.Contains(rec, want) {
			n.t.Errorf("get configloaderrors boot lacks %q:\n%s", want, rec)
		}
	}

	if got := n.ok("read", "/system/state/config.yaml"); got != string(good) {
		n.t.Errorf("config.yaml is not the last good config:\n%s", got)
	}

	n.absent("/var/tb-bad")
	n.absent(criPart)

	if got := n.ok("read", "/etc/cri/conf.d/cri.toml"); strings.Contains(got, "tb-no-such-spec") {
		n.t.Errorf("cri.toml still has the failed part:\n%s", got)
	}

	n.criHealthy()
}
