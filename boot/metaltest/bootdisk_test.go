package metaltest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/initramfs"
)

// installerLayout builds an installer image (`talosbox imager installer`,
// what make installer runs) from bin, with a zstd initramfs as users'
// have, into an OCI layout of its own, and returns the layout.
func installerLayout(t *testing.T, bin, ref, version string) string {
	t.Helper()

	k, err := kernel()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "initramfs.cpio.zst")

	mods := append([]string(nil), guestModules...)
	if _, err := initramfs.BuildFile(p, initramfs.Options{Binary: bin, ModulesDir: k.ModulesDir, Modules: mods, Compression: initramfs.Zstd}); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(bin, "imager", "installer", "--out", dir, "--kernel-dir", filepath.Dir(filepath.Dir(k.Image)), "--kernel-version", k.Release, "--initramfs", p,
		"--tag", ref, "--image-version", version).CombinedOutput()
	if err != nil {
		t.Fatalf("imager installer: %v\n%s", err, out)
	}

	t.Logf("%s", strings.TrimSpace(string(out)))

	return filepath.Join(dir, "oci")
}

// TestMetalBootFromDisk installs a node from an installer image pulled
// through a registry mirror (talosctl image cache-serve on the host), and
// then boots it from its own disk: SeaBIOS, the GRUB the node wrote into
// the MBR and the BIOS boot partition, and slot A on BOOT. The same
// configured node's boot with QEMU's -kernel is timed in the same run.
func TestMetalBootFromDisk(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	const ref = "ghcr.io/talosbox/installer:v1.0.0-test"

	port := serveLayout(t, bin, installerLayout(t, bin, ref, "v1.0.0-test"))

	n := newNode(t, nodeOptions{disk: true, reachHost: true})
	cp := n.patchConfig(n.genConfig("disk"), "installer.yaml", fmt.Sprintf(
		`{"machine":{"install":{"image":%q},"registries":{"mirrors":{"ghcr.io":{"endpoints":["http://10.0.2.2:%d"]}}}}}`, ref, port))

	t.Log("boot 1 (-kernel): maintenance, then the install pulls the installer and writes BOOT")
	n.boot()
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)
	n.ok("apply-config", "--insecure", "-f", cp)
	n.wait("[talos] pulled "+ref+" from http://10.0.2.2:", servicesTimeout)
	t.Log(n.wait("[talos] wrote "+ref+" v1.0.0-test to A (kernel ", servicesTimeout))
	n.wait("[talos] installed v1.0.0-test on vda: the disk boots by itself (GRUB, entry A)", servicesTimeout)
	n.wait(markServices, servicesTimeout)

	t.Log("boot 2 (-kernel): the config from STATE")
	n.ok("reboot")
	n.waitExit(markRebooting)
	n.boot()
	n.wait(markServices, servicesTimeout)
	kernelBoot := time.Since(n.started)

	t.Log("boot 3: from the disk")
	n.ok("reboot")
	n.waitExit(markRebooting)

	n.fromDisk = true
	n.boot()
	n.wait("Booting `A - talosbox (v1.0.0-test)'", bootTimeout)
	n.wait(markServices, servicesTimeout)
	diskBoot := time.Since(n.started)

	if out := n.ok("read", "/proc/cmdline"); !strings.Contains(out, "BOOT_IMAGE=/A/vmlinuz") || !strings.Contains(out, "talosbox.fatal=poweroff") {
		t.Errorf("the disk boot's kernel command line: %q, want GRUB's BOOT_IMAGE=/A/vmlinuz and the install's parameters", out)
	}

	t.Logf("QEMU start to services up, config from STATE: -kernel %.1fs, from disk (SeaBIOS, GRUB, zstd initramfs) %.1fs",
		kernelBoot.Seconds(), diskBoot.Seconds())

	n.ok("shutdown")
	n.waitExit(markPowerOff)
}
