//go:build e2e

package metaltest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var tagRe = regexp.MustCompile(`(?m)^Server:\n\tNODE:.*\n\tTag:\s+(\S+)`)

// serverTag is the version the node reports.
func (n *node) serverTag() string {
	n.t.Helper()

	m := tagRe.FindStringSubmatch(n.ok("version"))
	if m == nil {
		n.t.Fatal("talosctl version: no server tag")
	}

	return m[1]
}

// customized checks what v2's customized installer adds: a system
// extension's file and manifest; the Dockerfile customization's file and
// extra kernel module (in modules.dep), and the extension's file its RM
// removed (want), or that none of it is there.
func (n *node) customized(want bool) {
	n.t.Helper()

	k, err := kernel()
	if err != nil {
		n.t.Fatal(err)
	}

	hello, _, helloErr := n.talosctl("read", helloPath)
	manifest, _, _ := n.talosctl("read", "/usr/local/etc/talosbox/extensions/hello.yaml")
	docker, _, dockerErr := n.talosctl("read", dockerPath)
	_, _, rmErr := n.talosctl("read", rmPath)
	dep := n.ok("read", "/lib/modules/"+k.Release+"/modules.dep")
	hasModule := strings.Contains(dep, "/"+extraModule+".ko:")

	switch {
	case want && (helloErr != nil || hello != helloText || !strings.Contains(manifest, "name: hello")):
		n.t.Errorf("the customized version's extension: %s = %q (%v), the manifest %q", helloPath, hello, helloErr, manifest)
	case want && (dockerErr != nil || docker != dockerText || rmErr == nil || !hasModule):
		n.t.Errorf("the customized version's Dockerfile customization: %s = %q (%v), %s removed by RM: %v, %s in modules.dep: %v",
			dockerPath, docker, dockerErr, rmPath, rmErr != nil, extraModule, hasModule)
	case !want && (helloErr == nil || dockerErr == nil || hasModule):
		n.t.Errorf("a version without the customization has %s (%v), %s (%v) or %s in modules.dep (%v)", helloPath, helloErr, dockerPath, dockerErr, extraModule, hasModule)
	}
}

// TestMetalUpgrade is one node's OS upgrades on UEFI (OVMF), booting from
// its own disk: the raw disk image (talosbox imager metal --platform
// nocloud, zstd), written to a bigger disk, boots through OVMF and the
// image's GRUB for UEFI; the node grows EPHEMERAL, takes its config from
// a NoCloud seed's user-data and formats the image's empty STATE,
// encrypted. Then: a reboot reads the config from STATE; refused upgrades
// change nothing; upgrade to v2 (slot B, pulled through a registry mirror:
// talosctl image cache-serve on the host); rollback to v1; a staged
// upgrade to v2; an upgrade to a v3 whose boot fails, which reverts to v2
// by itself. STATE is encrypted and etcd bootstrapped: both must survive
// every step. TestMetalNoCloud boots the same image on SeaBIOS,
// TestMetalISO installs from the ISO on UEFI.
func TestMetalUpgrade(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	const (
		repo = installerRepo
		v2   = upgradeV2
		v3   = brokenV3
	)

	inst := pull(t, upgradeInstallers)
	v1 := inst.v1
	port := serveLayout(t, bin, inst.layout)

	dir := t.TempDir()
	img := filepath.Join(dir, "metal-amd64.raw.zst")
	buildMedia(t, bin, "metal", inst.initramfs, img, "--platform", "nocloud")

	n := newNode(t, nodeOptions{diskImage: img, reachHost: true, uefi: true, seed: filepath.Join(dir, "seed.iso")})
	cp := n.patchConfig(n.genConfig("upgrade"), "installer.yaml", fmt.Sprintf(`{"machine":{"install":{"image":"%s:v1"},
"registries":{"mirrors":{"ghcr.io":{"endpoints":["http://10.0.2.2:%d"]}}},
"systemDiskEncryption":{"state":{"provider":"luks2","keys":[{"nodeID":{},"slot":0}]}}}}`, repo, port))

	cfg, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}

	cidata(t, n.seed, map[string]string{"user-data": string(cfg), "meta-data": "instance-id: iid-upgrade-1\n"})

	rebootInto := func(what string) {
		t.Helper()
		n.waitExit(markRebooting)
		t.Log(what)
		n.boot()
	}

	t.Log("boot 1: the disk image on UEFI; the seed's config encrypts and formats STATE in place")
	n.boot()
	n.wait("Booting `A - talosbox ("+v1+")'", bootTimeout)
	n.imageGrown()
	n.wait("[talos] loaded config from the NoCloud seed (user-data)", bootTimeout)
	n.wait(markServices, servicesTimeout)
	imageBoot := time.Since(n.started)

	n.ephemeralFillsDisk()
	n.ok("bootstrap")
	n.wait("[talos] service[etcd](Running): Health check successful", servicesTimeout)

	members := n.ok("etcd", "members")

	n.ok("reboot")
	rebootInto("boot 2: from the disk on UEFI again, v1 in A, the config from STATE")
	n.wait("Booting `A - talosbox ("+v1+")'", bootTimeout)
	n.wait(markServices, servicesTimeout)
	diskBoot := time.Since(n.started)

	if out := n.ok("read", "/proc/cmdline"); !strings.Contains(out, "BOOT_IMAGE=/A/vmlinuz") || !strings.Contains(out, "talosbox.fatal=poweroff") {
		t.Errorf("the disk boot's kernel command line: %q, want GRUB's BOOT_IMAGE=/A/vmlinuz and the install's parameters", out)
	}

	if out := n.ok("read", "/sys/firmware/efi/fw_platform_size"); strings.TrimSpace(out) != "64" {
		t.Errorf("/sys/firmware/efi/fw_platform_size: %q: the disk did not boot on 64-bit UEFI", out)
	}

	if strings.Contains(n.console(), "fitted the partition table") {
		t.Errorf("the second boot fitted the partition table again")
	}

	t.Logf("OVMF (UEFI): QEMU start to services up from the disk image, config from the seed %.1fs; again, config from STATE %.1fs",
		imageBoot.Seconds(), diskBoot.Seconds())

	t.Log("bad input: the node answers with an error and stays as it is")

	for _, tc := range []struct{ image, want string }{
		{repo + ":v0-missing", "MANIFEST_UNKNOWN"},
		{repo + ":no-kernel", "not an installer image: it has no /usr/install/amd64/vmlinuz"},
	} {
		if _, errOut, err := n.talosctl("upgrade", "--image", tc.image, "--wait=false"); err == nil || !strings.Contains(errOut, tc.want) {
			t.Errorf("upgrade --image %s: %v, want %q\n%s", tc.image, err, tc.want, errOut)
		}
	}

	if out := n.ok("get", "meta"); strings.Contains(out, "0x06") {
		t.Errorf("a refused upgrade left a fallback in META:\n%s", out)
	}

	t.Log("upgrade to v2")

	// --wait (the default) follows the node down and back up.
	start := time.Now()
	upgraded := n.talosctlAsync(servicesTimeout+bootTimeout, "upgrade", "--image", repo+":v2", "--timeout", "4m")
	n.wait("[talos] upgrade: "+v2+" is installed in B; A is the fallback until it runs", commandTimeout)
	rebootInto("boot 3: v2 from B")
	n.wait("Booting `B - talosbox ("+v2+")'", bootTimeout)
	n.wait("[talos] removing fallback entry: the upgrade runs (it came from A)", servicesTimeout)
	n.wait(markServices, servicesTimeout)
	t.Logf("upgrade v1 → v2, from the request to services up: %s", time.Since(start).Round(100*time.Millisecond))

	// One line says the node is back, named as the other commands name
	// it (the endpoint, with no --nodes), and nothing else says it again.
	if out, errOut, err := upgraded(); err != nil || !strings.HasPrefix(out, "127.0.0.1\tupgraded: runs "+v2+" (") {
		t.Errorf("upgrade --wait: %v, want it to report %s\n%s%s", err, v2, out, errOut)
	} else if strings.Contains(errOut, "back: running") {
		t.Errorf("upgrade --wait reports the node back twice:\n%s%s", out, errOut)
	} else {
		t.Logf("upgrade --wait: %s", strings.TrimSpace(out))
	}

	if tag := n.serverTag(); tag != v2 {
		t.Fatalf("after the upgrade the node runs %s, want %s", tag, v2)
	}

	// v2's installer is customized: its extension's file and its extra
	// kernel module reached the node through the upgrade.
	n.customized(true)

	n.wait("[talos] service[etcd](Running): Health check successful", servicesTimeout)

	if got := n.ok("etcd", "members"); got != members {
		t.Errorf("etcd members changed across the upgrade:\n%s\nwas:\n%s", got, members)
	}

	t.Log("rollback from v2: back to v1 in A")
	n.ok("rollback")
	n.wait("[talos] rollback: A boots next", commandTimeout)
	rebootInto("boot 4: rolled back to v1 in A")
	n.wait("Booting `A - talosbox ("+v1+")'", bootTimeout)
	n.wait(markServices, servicesTimeout)

	if tag := n.serverTag(); tag != v1 {
		t.Fatalf("after the rollback the node runs %s, want %s", tag, v1)
	}

	n.customized(false)

	t.Log("a staged upgrade to v2: installed at the next boot, then one more reboot into it")
	n.ok("upgrade", "--image", repo+":v2", "--stage", "--wait=false")
	n.wait("[talos] staged the upgrade to "+repo+":v2: it is installed at the next boot", commandTimeout)
	rebootInto("boot 5: installs the staged upgrade")
	n.wait("[talos] staged upgrade via "+repo+":v2", servicesTimeout)
	n.wait("[talos] upgrade: "+v2+" is installed in B; A is the fallback until it runs", servicesTimeout)
	rebootInto("boot 6: v2 from B")
	n.wait("Booting `B - talosbox ("+v2+")'", bootTimeout)
	n.wait(markServices, servicesTimeout)

	if tag := n.serverTag(); tag != v2 {
		t.Fatalf("after the staged upgrade the node runs %s, want %s", tag, v2)
	}

	t.Log("upgrade to the broken v3: its boot fails and reverts to v2 by itself")
	n.ok("upgrade", "--image", repo+":v3", "--wait=false")
	n.wait("[talos] upgrade: "+v3+" is installed in A; B is the fallback until it runs", commandTimeout)
	rebootInto("boot 7: v3 from A")
	n.wait("Booting `A - talosbox ("+v3+")'", bootTimeout)
	n.wait("this build fails every boot on purpose", servicesTimeout)
	n.wait(`[talos] reverting failed upgrade, switching to "B"`, servicesTimeout)
	n.wait("[talos] rebooting in 10 seconds", commandTimeout)
	n.wait("[talos] rebooting in 0 seconds", commandTimeout)
	rebootInto("boot 8: back on v2")
	n.wait("Booting `B - talosbox ("+v2+")'", bootTimeout)
	n.wait(markServices, servicesTimeout)

	if tag := n.serverTag(); tag != v2 {
		t.Fatalf("after the failed upgrade the node runs %s, want %s", tag, v2)
	}

	n.wait("[talos] service[etcd](Running): Health check successful", servicesTimeout)

	if got := n.ok("etcd", "members"); got != members {
		t.Errorf("etcd members changed across the upgrades:\n%s\nwas:\n%s", got, members)
	}

	n.ok("shutdown")
	n.waitExit(markPowerOff)
}
