//go:build e2e

package metaltest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQEMUClusterDiskImage: cluster create qemu --disk-image-path from a
// nocloud disk image, on UEFI (--with-uefi). Each node's disk is the image
// expanded and grown; OVMF boots it, the node takes its address and name
// from the seed cluster create writes, grows EPHEMERAL to the disk's end
// and gets its config through maintenance mode (STATE is made in place),
// and the cluster is healthy. An image of the metal platform is refused
// before any node starts, and nothing is left.
func TestQEMUClusterDiskImage(t *testing.T) {
	inst := pull(t, upgradeInstallers)
	c := newVMCluster(t)

	dir := t.TempDir()
	metal, nc := filepath.Join(dir, "metal.raw.zst"), filepath.Join(dir, "nocloud.raw.zst")
	buildPlain(t, c.bin, "metal", inst.initramfs, metal)
	buildPlain(t, c.bin, "metal", inst.initramfs, nc, "--platform", "nocloud", "--extra-kernel-arg", "console=ttyS0")

	create := append([]string{"cluster", "create", "qemu"}, c.stateArgs()...)
	create = append(create, "--subnet", c.cidr.String(), "--controlplanes", "1", "--workers", "0", "--memory", "1024",
		"--with-uefi", "--image-cache=false", "--wait-timeout", "6m")

	out, err := c.talosctl(commandTimeout, append(create, "--disk-image-path", metal)...)
	if err == nil || !strings.Contains(out, "boots another platform than nocloud") {
		t.Errorf("a metal disk image: %v, want a refusal:\n%s", err, out)
	}

	if ents, _ := os.ReadDir(c.state); len(ents) != 0 {
		t.Errorf("the state directory is not empty after the refusal")
	}

	start := time.Now()
	out = c.ok(10*time.Minute, append(create, "--disk-image-path", nc)...)
	t.Logf("cluster create qemu --disk-image-path --with-uefi, 1 control plane (%s):\n%s", time.Since(start).Round(time.Millisecond), out)

	if !strings.Contains(out, "cluster \""+c.name+"\" is healthy") {
		t.Errorf("create output lacks the healthy cluster")
	}

	if got := strings.TrimSpace(c.ok(commandTimeout, "-n", c.ip(0), "read", "/sys/firmware/efi/fw_platform_size")); got != "64" {
		t.Errorf("fw_platform_size %q: the node did not boot on UEFI", got)
	}

	console := strings.Join(c.consoles(), "")
	if b, _ := os.ReadFile(console); !strings.Contains(string(b), "[talos] fitted the partition table to vda") ||
		!strings.Contains(string(b), "BOOT_IMAGE=/A/vmlinuz talos.platform=nocloud") {
		t.Errorf("the console does not show the image's boot and its growth:\n%s", b)
	}

	c.ok(commandTimeout, "cluster", "destroy", "--name", c.name, "--state", c.state)
}
