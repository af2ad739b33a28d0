//go:build e2e

package metaltest

// A metal node whose next config breaks its boot comes back on its last
// good config across real reboots, and a try that cuts the node off its
// clients reverts by itself: parts of TestMetalLifecycle, which has the
// installed node these need.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/configpatch"
)

// Console lines of a config fallback (internal/machine prints them).
const (
	markKeptFailed     = "[talos] config fallback: kept the failed config as /system/state/config.yaml.failed"
	markFallbackReboot = "[talos] config fallback: rebooting into the last good config"
)

// stateOffset is where the STATE partition starts in the node's disk
// image, in bytes (sfdisk reads the GPT the install wrote).
func (n *node) stateOffset() int64 {
	n.t.Helper()

	out, err := exec.Command("sfdisk", "--json", n.disk).Output()
	if err != nil {
		n.t.Fatalf("sfdisk --json %s: %v", n.disk, err)
	}

	var table struct {
		PartitionTable struct {
			SectorSize int64 `json:"sectorsize"`
			Partitions []struct {
				Start int64  `json:"start"`
				Name  string `json:"name"`
			} `json:"partitions"`
		} `json:"partitiontable"`
	}

	if err := json.Unmarshal(out, &table); err != nil {
		n.t.Fatal(err)
	}

	for _, p := range table.PartitionTable.Partitions {
		if p.Name == "STATE" {
			return p.Start * table.PartitionTable.SectorSize
		}
	}

	n.t.Fatalf("no STATE partition on %s:\n%s", n.disk, out)

	return 0
}

// writeStateFile replaces a file on the (plain ext4) STATE of the disk
// image while the guest is down, with e2fsprogs' debugfs: what a config
// that got past validation leaves there, with no API involved.
func (n *node) writeStateFile(name string, data []byte) {
	n.t.Helper()

	src := filepath.Join(n.dir, "state-"+name)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		n.t.Fatal(err)
	}

	cmds := filepath.Join(n.dir, "debugfs.cmds")
	script := fmt.Sprintf("rm %s\nwrite %s %s\nsif %s mode 0100600\n", name, src, name, name)

	if err := os.WriteFile(cmds, []byte(script), 0o600); err != nil {
		n.t.Fatal(err)
	}

	img := fmt.Sprintf("%s?offset=%d", n.disk, n.stateOffset())

	out, err := exec.Command("debugfs", "-w", "-f", cmds, img).CombinedOutput()
	if err != nil || strings.Contains(string(out), "debugfs: ") && strings.Contains(string(out), "rror") {
		n.t.Fatalf("debugfs on %s: %v\n%s", img, err, out)
	}
}

// patchBytes patches a config file in Go, past talosctl's checks.
func (n *node) patchBytes(base, patch string) []byte {
	n.t.Helper()

	data, err := os.ReadFile(base)
	if err != nil {
		n.t.Fatal(err)
	}

	ps, err := configpatch.Parse([]byte(patch))
	if err != nil {
		n.t.Fatal(err)
	}

	out, err := configpatch.Apply(data, ps...)
	if err != nil {
		n.t.Fatal(err)
	}

	return out
}

// configFallback is the lifecycle's reboot, made to carry bad configs:
// first the CRI parts containerd refuses, each refused in every apply
// mode; then a staged config whose kernel module does not exist (the boot
// writes its machine file, fails at loadKernelModules, the node keeps it
// aside, restores its last good config and reboots into it, whose boot
// removes the file), then, while the machine is down
// after that reboot, /etc/motd written straight into STATE past
// validation (a config only the stricter checks refuse). Either way the node ends up running its
// last good config (cp), with the failed one readable. Last, a CRI part
// that fails containerd at load (criLoadFallback).
func (n *node) configFallback(cp string) {
	n.t.Helper()

	good, err := os.ReadFile(cp)
	if err != nil {
		n.t.Fatal(err)
	}

	n.criRefusals(cp)

	// The failed boot writes its machine file before the module fails it:
	// the boot of the last good config removes it.
	n.ok("apply-config", "--mode", "staged", "-f", n.patchConfig(cp, "module.yaml",
		`{"machine":{"kernel":{"modules":[{"name":"talosbox_no_such_module"}]},"files":[{"path":"/var/tb-stale/f","op":"create","content":"stale"}]}}`))
	n.ok("reboot")
	n.waitExit(markRebooting)

	start := time.Now()

	n.boot()
	n.wait("[talos] loaded config from /system/state/config.yaml", bootTimeout)
	n.wait("[talos] task loadKernelModules", servicesTimeout)
	n.wait(markKeptFailed, servicesTimeout)
	n.wait(markFallbackReboot, servicesTimeout)
	n.waitExit(markRebooting)

	if strings.Contains(n.console(), markServices) {
		n.t.Errorf("the boot of the staged config started its services")
	}

	motd := n.patchBytes(cp, `{"machine":{"files":[{"path":"/etc/motd","content":"hello\n","op":"create"}]}}`)
	n.writeStateFile("config.yaml", motd)

	n.boot()
	n.wait(markKeptFailed, bootTimeout)

	// Validation refuses /etc/motd as the config loads: the last good
	// config loads at once. A build whose validation let it through
	// fails writeUserFiles instead and reboots into the last good.
	if m := n.waitRe(regexp.MustCompile(regexp.QuoteMeta(markServices)+"|"+regexp.QuoteMeta(markFallbackReboot)), servicesTimeout); m[0] == markFallbackReboot {
		n.waitExit(markRebooting)
		n.boot()
	}

	n.wait(markServices, servicesTimeout)
	n.t.Logf("from the boot of the staged config to services up on the last good config: %s", time.Since(start).Round(time.Second))

	rec := n.ok("get", "configloaderrors", "boot", "-o", "yaml")
	for _, want := range []string{"/etc/motd", "the last good config", "failedConfigPath: /system/state/config.yaml.failed"} {
		if !strings.Contains(rec, want) {
			n.t.Errorf("get configloaderrors boot lacks %q:\n%s", want, rec)
		}
	}

	if got := n.ok("read", "/system/state/config.yaml.failed"); got != string(motd) {
		n.t.Errorf("config.yaml.failed is not the /etc/motd config:\n%s", got)
	}

	if got := n.ok("read", "/system/state/config.yaml"); got != string(good) {
		n.t.Errorf("config.yaml is not the last good config:\n%s", got)
	}

	if got := n.ok("logs", "machined"); strings.Count(got, markKeptFailed) != 1 {
		n.t.Errorf("this boot fell back %d times", strings.Count(got, markKeptFailed))
	}

	if !strings.Contains(n.console(), "[talos] machine files removed (the config no longer writes them): /var/tb-stale/f") {
		n.t.Errorf("the boot of the last good config did not remove the failed config's file")
	}

	n.absent("/var/tb-stale")
	n.criHealthy()

	n.criLoadFallback(cp)
}

// tryNewCA applies, in try mode, the config with another cluster's OS
// CA: apid then presents a certificate the talosconfig does not trust, so
// no client can confirm or undo the try, and the node reverts by itself
// when the timeout passes. (A try whose static address replaces DHCP's
// cuts the node off as well, but networkd takes that change up at
// varying speed under TCG: not a clock a test can rely on.)
func (n *node) tryNewCA(cp string) {
	n.t.Helper()

	// The node cuts its clients off as it applies: a short try shows both
	// sides of it.
	const timeout = 10 * time.Second

	other := filepath.Join(n.dir, "other")
	if out, err := exec.Command(n.bin, "talosctl", "gen", "config", "other", "https://10.9.9.9:6443", "-o", other).CombinedOutput(); err != nil {
		n.t.Fatalf("gen config: %v\n%s", err, out)
	}

	raw, err := os.ReadFile(filepath.Join(other, "controlplane.yaml"))
	if err != nil {
		n.t.Fatal(err)
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
		n.t.Fatalf("the other cluster's machine.ca: %v", err)
	}

	try := filepath.Join(n.dir, "try-ca.yaml")
	if err := os.WriteFile(try, n.patchBytes(cp, fmt.Sprintf(`[{"op": "replace", "path": "/machine/ca", "value": {"crt": %q, "key": %q}}]`,
		doc.Machine.CA.Crt, doc.Machine.CA.Key)), 0o600); err != nil {
		n.t.Fatal(err)
	}

	start := time.Now()
	n.ok("apply-config", "--mode", "try", "--timeout", timeout.String(), "-f", try)

	answers := func() bool {
		_, _, err := n.talosctlAsync(5*time.Second, "version")()
		return err == nil
	}

	if err := waitUntil(timeout, n.vm.Done(), func() error {
		if answers() {
			return errors.New("the node still answers clients of the old CA")
		}

		return nil
	}); err != nil {
		n.t.Fatalf("the try did not cut the node's clients off: %v", err)
	}

	cut := time.Since(start)

	n.until("the node's own revert", timeout+time.Minute, func() error {
		if !answers() {
			return errors.New("no answer yet")
		}

		return nil
	})

	back := time.Since(start)
	n.t.Logf("try with another machine.ca: clients cut off after %s, served again after %s (timeout %s)", cut.Round(100*time.Millisecond), back.Round(100*time.Millisecond), timeout)

	if back < timeout-2*time.Second {
		n.t.Errorf("served again after %s, before the try's timeout of %s: not the node's revert", back, timeout)
	}

	tail := doc.Machine.CA.Crt[len(doc.Machine.CA.Crt)-64:]
	if out := n.ok("get", "mc", "-o", "yaml"); strings.Contains(out, tail) {
		n.t.Errorf("the active config still has the tried machine.ca")
	}
}
