//go:build e2e

package metaltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Console lines the lifecycle waits on (internal/machine prints them).
const (
	markMaintenance = "[talos] entering maintenance mode"
	markServices    = "[talos] services: "
	markRebooting   = "[talos] rebooting"
	markPowerOff    = "[talos] powering off"
)

// TestMetalLifecycle is one node's life on a disk: first boot into
// maintenance mode, install by apply-config, bootstrap, reboot from the
// disk, reset back to maintenance mode, shutdown.
func TestMetalLifecycle(t *testing.T) {
	// The first boot also shows the console dashboard, on the second
	// serial port (ttyS1, which QEMU writes to a file).
	tty := filepath.Join(t.TempDir(), "ttyS1.out")

	// A third disk, /dev/vdc, for a UserVolumeConfig.
	vdc := filepath.Join(t.TempDir(), "disk3.img")
	if err := sparseDisk(vdc, 256<<20); err != nil {
		t.Fatal(err)
	}

	n := newNode(t, nodeOptions{
		disk: true, userDisk: true,
		// The guest reaches the test's kernel log endpoint and event sink.
		reachHost: true,
		append:    []string{"talos.dashboard.disabled=0", "talos.dashboard.tty=ttyS1", "talos.dashboard.term=vt100"},
		qemuArgs:  []string{"-serial", "file:" + tty, "-drive", "file=" + vdc + ",if=virtio,format=raw,cache=unsafe"},
	})
	cp := n.genConfig("metal")

	t.Log("boot 1: a blank disk, no config: maintenance mode")
	n.boot()
	n.wait("[talos] loaded kernel modules virtio_pci virtio_blk virtio_net virtio_rng", bootTimeout)
	n.wait("[talos] no STATE partition: not installed yet", bootTimeout)
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)
	n.maintenanceReads(`\sDisk\s+vda\s+\d+\s+6\.4 GB\s+false\s+virtio\s`, `\sDisk\s+vdb\s+\d+\s+268 MB\s+false\s+virtio\s`)
	n.consoleDashboard(tty)

	// machine.install.diskSelector: one matching no disk is refused,
	// naming the disks, and the node stays in maintenance mode; one
	// matching the virtio disk (by bus and size) is what installs.
	noDisk := n.patchConfig(cp, "nodisk.yaml", `{"machine":{"install":{"diskSelector":{"type":"nvme"}}}}`)
	if _, errOut, err := n.talosctl("apply-config", "--insecure", "-f", noDisk); err == nil ||
		!strings.Contains(errOut, `machine.install.diskSelector {type: "nvme"} matches no disk here (disks: /dev/vda`) {
		t.Errorf("a selector matching no disk: %v\n%s", err, errOut)
	}

	n.maintenanceAnswers(bootTimeout)

	cp = n.patchConfig(cp, "selector.yaml", `[{"op":"replace","path":"/machine/install/disk","value":"/dev/sdz"},
{"op":"add","path":"/machine/install/diskSelector","value":{"busPath":"/pci0000:00/*","size":">= 4GB"}},
{"op":"add","path":"/machine/disks","value":[{"device":"/dev/vdb","partitions":[{"size":"64 MiB","mountpoint":"/var/mnt/a"},{"mountpoint":"/var/mnt/b"}]}]}]`)

	// A user volume on the first small disk that has room: /dev/vdb is
	// all machine.disks' by then, so it is /dev/vdc.
	cp = n.withDocuments(cp, "uservolume.yaml", `apiVersion: v1alpha1
kind: UserVolumeConfig
name: data
provisioning:
    diskSelector:
        match: '!system_disk && disk.size < 1u * GiB'
    maxSize: 64MiB
filesystem:
    type: ext4
`)

	t.Log("apply-config: the selector picks /dev/vda; the node installs there and starts its services")
	out := n.ok("apply-config", "--insecure", "-f", cp)
	t.Logf("apply-config: %s", out)

	n.wait("[talos] installing the system partitions on /dev/vda", servicesTimeout)
	n.wait("[talos] mounted STATE (/dev/vda5) at /system/state", servicesTimeout)
	n.wait("[talos] mounted EPHEMERAL (/dev/vda6) at /var", servicesTimeout)
	n.wait("[talos] /dev/vdb has no partitions: laying out 2 as machine.disks says", servicesTimeout)
	n.wait("[talos] mounted /dev/vdb1 (64 MiB) at /var/mnt/a", servicesTimeout)
	n.wait("[talos] mounted /dev/vdb2 (", servicesTimeout)
	n.wait("[talos] user volume data: added partition 1 u-data (64 MiB) to /dev/vdc", servicesTimeout)
	n.wait("[talos] mounted user volume data (/dev/vdc1, 64 MiB) at /var/mnt/data", servicesTimeout)
	services := n.wait(markServices, servicesTimeout)

	for _, want := range []string{"apid=Running", "machined=Running", "trustd=Running", "timed=Running", "etcd="} {
		if !strings.Contains(services, want) {
			t.Errorf("services line lacks %q: %s", want, services)
		}
	}

	t.Log("bootstrap: etcd comes up")
	n.ok("bootstrap")
	n.etcdHealthy()

	t.Log("operate: read commands through the forward")
	n.operate()

	t.Log("block resources: the disk, its partitions, the system disk")
	if out := n.ok("get", "systemdisk"); !regexp.MustCompile(`system-disk\s+\d+\s+vda`).MatchString(out) {
		t.Errorf("get systemdisk:\n%s", out)
	}

	if out := n.ok("get", "disks", "vda"); !strings.Contains(out, "virtio") {
		t.Errorf("get disks vda:\n%s", out)
	}

	if out := n.ok("get", "blockdevices"); !regexp.MustCompile(`vda6\s+\d+\s+partition\s+EPHEMERAL`).MatchString(out) {
		t.Errorf("get blockdevices:\n%s", out)
	}

	dv := n.ok("get", "discoveredvolumes")
	for _, want := range []string{`vda\s+\d+\s+disk\s+.*\sgpt`, `vda4\s+\d+\s+partition\s+.*\stalosmeta\s+META`, `vda5\s+\d+\s+partition\s+.*\sext4\s+STATE\s+STATE`} {
		if !regexp.MustCompile(want).MatchString(dv) {
			t.Errorf("get discoveredvolumes lacks %s:\n%s", want, dv)
		}
	}

	// Applied before day 2, checked after: the watchdog's timeouts pass
	// meanwhile.
	t.Log("observability, live: KmsgLogConfig, EventSinkConfig and WatchdogTimerConfig applied")
	obs := n.observability(cp)

	t.Log("day-2: hardware from SMBIOS, cgroups, wipe disk refusals")
	n.day2()

	t.Log("observability: the kernel log and the events reached the test, the watchdog is fed, then stopped")
	obs.check()

	t.Log("reboot into a staged config that breaks the boot, then into /etc/motd written to STATE: back with the last good config from STATE, no maintenance mode")
	n.configFallback(cp)
	n.wait("[talos] mounted STATE (/dev/vda5) at /system/state", bootTimeout)
	n.wait("[talos] loaded config from /system/state/config.yaml", bootTimeout)
	n.wait("[talos] mounted /dev/vdb2 (", servicesTimeout)
	n.wait("[talos] mounted user volume data (/dev/vdc1, 64 MiB) at /var/mnt/data", servicesTimeout)
	n.wait(markServices, servicesTimeout)

	if strings.Contains(n.console(), "has no partitions") || strings.Contains(n.console(), "added partition") {
		t.Errorf("machine.disks or the user volume was made again on the reboot")
	}

	if out := n.ok("mounts"); !strings.Contains(out, "/var/mnt/a") || !strings.Contains(out, "/var/mnt/b") || !strings.Contains(out, "/var/mnt/data") {
		t.Errorf("talosctl mounts lacks the user disks or the user volume:\n%s", out)
	}

	if out := n.ok("get", "volumestatus", "u-data", "-o", "yaml"); !strings.Contains(out, "phase: ready") || !strings.Contains(out, "location: /dev/vdc1") {
		t.Errorf("get volumestatus u-data:\n%s", out)
	}

	if strings.Contains(n.console(), markMaintenance) {
		t.Fatalf("the reboot went through maintenance mode:\n%s", n.console())
	}

	n.etcdHealthy()

	if out := n.ok("etcd", "members"); !strings.Contains(out, "10.0.2.15") {
		t.Errorf("etcd members after the reboot (its data is on EPHEMERAL):\n%s", out)
	}

	t.Log("try: another cluster's machine.ca cuts talosctl off; the node reverts by itself")
	n.tryNewCA(cp)

	t.Log("reset: STATE and EPHEMERAL wiped, back to maintenance mode")
	n.ok("reset", "--graceful=false", "--reboot")
	n.wait("[talos] wiped STATE (/dev/vda5)", exitTimeout)
	n.wait("[talos] wiped EPHEMERAL (/dev/vda6)", exitTimeout)
	n.waitExit(markRebooting)

	n.boot()
	n.wait("[talos] STATE (/dev/vda5) is empty: it is made when a config arrives", bootTimeout)
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)

	// Seed 001's way to an encrypted STATE: wipe it, then apply a config
	// that encrypts it in maintenance mode.
	t.Log("apply-config again on the installed disk, now with STATE encrypted")
	n.ok("apply-config", "--insecure", "-f", n.patchConfig(cp, "encrypted.yaml", encryptState))
	n.wait("[talos] STATE (/dev/vda5) was empty: encrypted it with luks2 (key slots 0)", servicesTimeout)
	n.wait("[talos] mounted STATE (/dev/mapper/vda5-encrypted) at /system/state", servicesTimeout)
	n.wait("[talos] EPHEMERAL (/dev/vda6) was empty: formatted it ext4", servicesTimeout)
	n.wait(markServices, servicesTimeout)

	// And back: a reset closes the encrypted STATE and erases its header
	// and key slots; a config without encryption makes it plain again.
	t.Log("reset of the encrypted STATE, then apply-config without encryption, then shutdown: QEMU exits")
	n.ok("reset", "--graceful=false", "--reboot")
	n.wait("[talos] closed STATE (/dev/mapper/vda5-encrypted)", exitTimeout)
	n.wait("[talos] wiped STATE (/dev/vda5)", exitTimeout)
	n.waitExit(markRebooting)

	n.boot()
	n.wait("[talos] STATE (/dev/vda5) is empty: it is made when a config arrives", bootTimeout)
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)
	n.ok("apply-config", "--insecure", "-f", cp)
	n.wait("[talos] STATE (/dev/vda5) was empty: formatted it ext4", servicesTimeout)
	n.wait("[talos] mounted STATE (/dev/vda5) at /system/state", servicesTimeout)
	n.wait(markServices, servicesTimeout)

	if strings.Contains(n.console(), "installing the system partitions") {
		t.Errorf("the disk was partitioned again after a reset")
	}

	n.ok("shutdown")
	n.waitExit(markPowerOff)
}

// `talosctl service etcd` when etcd runs and is healthy.
var (
	etcdRunning = regexp.MustCompile(`(?m)^STATE\s+Running\s*$`)
	etcdHealthy = regexp.MustCompile(`(?m)^HEALTH\s+OK\s*$`)
)

// etcdHealthy waits until the etcd service is Running and healthy and
// answers the etcd API.
func (n *node) etcdHealthy() {
	n.t.Helper()

	n.until("etcd healthy", servicesTimeout, func() error {
		out, errOut, err := n.talosctl("service", "etcd")
		if err != nil {
			return fmt.Errorf("%w: %s", err, errOut)
		}

		if !etcdRunning.MatchString(out) || !etcdHealthy.MatchString(out) {
			return errors.New("etcd is not Running and healthy yet:\n" + out)
		}

		return nil
	})

	n.until("etcd status", commandTimeout, func() error {
		_, errOut, err := n.talosctl("etcd", "status")
		if err != nil {
			return fmt.Errorf("%w: %s", err, errOut)
		}

		return nil
	})
}

// operate checks the read commands an operator starts with.
func (n *node) operate() {
	n.t.Helper()

	checks := []struct {
		args []string
		want []string
	}{
		{[]string{"version"}, []string{"Server:", "Tag:"}},
		{[]string{"services"}, []string{"apid", "etcd", "machined", "trustd", "Running"}},
		{[]string{"get", "addresses"}, []string{"eth0/10.0.2.15/24"}},
		{[]string{"logs", "machined"}, []string{"[talos] installing the system partitions on /dev/vda"}},
		{[]string{"dmesg"}, []string{"Linux version", "virtio_blk"}},
		{[]string{"memory"}, []string{"TOTAL", "USED", "127.0.0.1"}},
		{[]string{"mounts"}, []string{"/system/state", "/var"}},
	}

	for _, c := range checks {
		out := n.ok(c.args...)

		for _, w := range c.want {
			if !strings.Contains(out, w) {
				n.t.Errorf("talosctl %s: output lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}

		if c.args[0] == "memory" {
			n.t.Logf("talosctl memory:\n%s", out)
		}
	}
}

// withDocuments writes a copy of a config with typed documents after it.
func (n *node) withDocuments(base, name, docs string) string {
	n.t.Helper()

	data, err := os.ReadFile(base)
	if err != nil {
		n.t.Fatal(err)
	}

	out := filepath.Join(filepath.Dir(base), name)
	if err := os.WriteFile(out, append(data, []byte("---\n"+docs)...), 0o600); err != nil {
		n.t.Fatal(err)
	}

	return out
}

// patchConfig writes a patched copy of a config beside it, with the
// project's own machineconfig patch.
func (n *node) patchConfig(base, name, patch string) string {
	n.t.Helper()

	out := filepath.Join(filepath.Dir(base), name)
	if b, err := exec.Command(n.bin, "talosctl", "machineconfig", "patch", base, "-p", patch, "-o", out).CombinedOutput(); err != nil {
		n.t.Fatalf("machineconfig patch: %v\n%s", err, b)
	}

	return out
}
