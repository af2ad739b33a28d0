//go:build e2e

package metaltest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/talosbox/talosbox/internal/disk"
)

// mediaArgs are the boot media's kernel arguments in these tests: the
// serial console last (it becomes /dev/console, where the node logs, as
// a serial-console VM's user adds it) and what every test node has.
func mediaArgs() []string {
	return append([]string{"console=ttyS0", "panic=-1"}, baseAppend...)
}

// buildMedia runs `talosbox imager iso|metal|pxe` (what make iso, make
// disk-image and make pxe run) on the test kernel and initrd, with the
// test nodes' kernel arguments, a fixed epoch and more flags.
func buildMedia(t testing.TB, bin, kind, initrd, out string, flags ...string) {
	t.Helper()

	args := []string{"--epoch", "1764374400"}
	for _, a := range mediaArgs() {
		args = append(args, "--extra-kernel-arg", a)
	}

	t.Logf("%s", buildPlain(t, bin, kind, initrd, out, append(args, flags...)...))
}

// buildISO runs `talosbox imager iso` on the test kernel and initrd with
// flags alone (no test arguments: a cluster's nodes keep running after a
// fatal error, as a user's).
func buildISO(t testing.TB, bin, initrd, out string, flags ...string) {
	t.Helper()
	buildPlain(t, bin, "iso", initrd, out, flags...)
}

// buildPlain runs `talosbox imager KIND` on the test kernel and initrd
// with flags, and returns what it printed.
func buildPlain(t testing.TB, bin, kind, initrd, out string, flags ...string) string {
	t.Helper()

	k, err := kernel()
	if err != nil {
		t.Fatal(err)
	}

	args := append([]string{"imager", kind, "--out", out, "--kernel-dir", filepath.Dir(filepath.Dir(k.Image)), "--kernel-version", k.Release,
		"--initramfs", initrd}, flags...)

	b, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("talosbox imager %s: %v\n%s", kind, err, b)
	}

	return strings.TrimSpace(string(b))
}

// installFromISO boots n from its ISO into maintenance mode, applies cp
// (which installs installerRepo:v1 through the mirror at port), and waits
// for the services; it returns how long the ISO took to maintenance.
func (n *node) installFromISO(cp, v1 string) time.Duration {
	n.t.Helper()

	n.boot()
	n.wait("Booting `talosbox (", bootTimeout)
	n.wait(markMaintenance, bootTimeout)

	toMaintenance := time.Since(n.started)

	n.maintenanceAnswers(bootTimeout)
	n.maintenanceReads(`\sDisk\s+vda\s+\d+\s+6\.4 GB\s+false\s+virtio\s`)
	n.ok("apply-config", "--insecure", "-f", cp)
	n.wait("[talos] installed "+v1+" on vda: the disk boots by itself (GRUB, entry A)", servicesTimeout)
	n.wait(markServices, servicesTimeout)

	return toMaintenance
}

// TestMetalISO is the ISO under UEFI (OVMF), as a user boots it from a
// CD-ROM: GRUB's El Torito EFI image boots the node into maintenance
// mode, where apply-config --insecure installs it to its disk from the
// installer image, GRUB for UEFI on its EFI partition; then OVMF boots it
// from that disk, the ISO gone. (TestQEMUKubernetes boots the ISO on
// SeaBIOS, through cluster create, and installs the same way.)
func TestMetalISO(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	inst := pull(t, upgradeInstallers)
	port := serveLayout(t, bin, inst.layout)

	iso := filepath.Join(t.TempDir(), "talosbox-amd64.iso")
	buildMedia(t, bin, "iso", inst.initramfs, iso)

	n := newNode(t, nodeOptions{disk: true, reachHost: true, cdrom: iso, uefi: true})
	cp := n.patchConfig(n.genConfig("iso"), "installer.yaml", fmt.Sprintf(`{"machine":{"install":{"image":"%s:v1"},
"registries":{"mirrors":{"ghcr.io":{"endpoints":["http://10.0.2.2:%d"]}}}}}`, installerRepo, port))

	t.Log("boot 1: the ISO on UEFI, maintenance mode, apply-config installs to vda")
	toMaintenance := n.installFromISO(cp, inst.v1)

	n.ok("reboot")
	n.waitExit(markRebooting)

	n.fromDisk = true

	t.Log("boot 2: from the disk on UEFI, the ISO ejected")
	n.boot()
	n.wait("Booting `A - talosbox ("+inst.v1+")'", bootTimeout)
	n.wait(markServices, servicesTimeout)

	fromDisk := time.Since(n.started)

	if out := n.ok("read", "/sys/firmware/efi/fw_platform_size"); strings.TrimSpace(out) != "64" {
		t.Errorf("/sys/firmware/efi/fw_platform_size: %q: the disk did not boot on 64-bit UEFI", out)
	}

	if out := n.ok("read", "/proc/cmdline"); !strings.Contains(out, "BOOT_IMAGE=/A/vmlinuz talos.platform=metal console=ttyS0 console=tty0 console=ttyS0") {
		t.Errorf("the disk's kernel command line: %q, want the ISO's, as the install carried it over", out)
	}

	t.Logf("OVMF (UEFI): QEMU start to maintenance mode from the ISO %.1fs; to services up from the disk %.1fs",
		toMaintenance.Seconds(), fromDisk.Seconds())

	n.ok("shutdown")
	n.waitExit(markPowerOff)
}

// TestMetalPXE is a network boot as a rack does it: the firmware's iPXE
// takes its script from DHCP and TFTP (QEMU's slirp serves both), and the
// script fetches the kernel and the initramfs over HTTP. The initramfs
// carries the machine config (--embedded-config-path), so the node comes
// up without apply-config, then hides the file. The media are nocloud's,
// and the SMBIOS serial number names a seed on the same server
// (ds=nocloud-net;s=URL): once DHCP is up the node fetches its meta-data
// and network-config, and moves to the static address and hostname they
// give, where the test reaches its API.
func TestMetalPXE(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	inst := pull(t, upgradeInstallers)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()

	// What the node fetched, to tell iPXE's requests from anything else
	// that could have booted it.
	var (
		mu      sync.Mutex
		fetched []string
	)

	files := http.FileServer(http.Dir(dir))
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched = append(fetched, r.URL.Path)
		mu.Unlock()
		files.ServeHTTP(w, r)
	})}

	go srv.Serve(ln) //nolint:errcheck // ends with Close

	t.Cleanup(func() { srv.Close() })

	const (
		ip       = "10.0.2.79"
		hostname = "pxe-seed-node"
	)

	base := fmt.Sprintf("http://10.0.2.2:%d/", ln.Addr().(*net.TCPAddr).Port)

	n := newNode(t, nodeOptions{disk: true, reachHost: true, netBoot: true, tftpDir: dir, bootFile: "boot.ipxe", memoryMiB: 1024,
		guestIP: ip, serial: "ds=nocloud-net;s=" + base + "seed/;h=from-serial"})

	// The node installs its partitions and runs from what it booted:
	// BOOT (the installer image) is TestMetalISO's and TestMetalUpgrade's.
	cp := n.patchConfig(n.genConfig("pxe"), "pxe.yaml", `{"machine":{"install":{"bootloader":false}}}`)

	buildMedia(t, bin, "pxe", inst.initramfs, dir, "--base-url", base, "--embedded-config-path", cp, "--platform", "nocloud")

	seed := map[string]string{
		"meta-data": "instance-id: iid-pxe-1\nlocal-hostname: " + hostname + "\n",
		"network-config": `version: 2
ethernets:
  nic0:
    match:
      macaddress: "52:54:00:12:34:56"
    addresses: [` + ip + `/24]
    gateway4: 10.0.2.2
`,
	}

	if err := os.Mkdir(filepath.Join(dir, "seed"), 0o755); err != nil {
		t.Fatal(err)
	}

	for name, data := range seed {
		if err := os.WriteFile(filepath.Join(dir, "seed", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	n.boot()
	n.wait("[talos] embedded config: ", bootTimeout)
	n.wait("[talos] nocloud: the SMBIOS serial number names the seed "+base+"seed/", bootTimeout)
	n.wait("[talos] loaded config from the embedded config", bootTimeout)
	n.wait("[talos] nocloud: fetched the seed "+base+"seed/", bootTimeout)
	n.wait(markServices, servicesTimeout)

	t.Logf("PXE: QEMU start to services up, kernel and initramfs over HTTP: %.1fs", time.Since(n.started).Seconds())

	// The config is hidden once read: it holds the cluster's secrets.
	if out, errOut, err := n.talosctl("read", "/usr/local/etc/talos/config.yaml"); err == nil || strings.Contains(out, "machine:") {
		t.Errorf("talosctl read of the embedded config after the boot: %v\n%s%s", err, out, errOut)
	}

	// The API answers through the forward to the seed's static address.
	if addrs := n.ok("get", "addresses"); !strings.Contains(addrs, "eth0/"+ip+"/24") || strings.Contains(addrs, "10.0.2.15") {
		t.Errorf("addresses: want the seed's %s on eth0 and no DHCP lease:\n%s", ip, addrs)
	}

	if h := n.ok("read", "/proc/sys/kernel/hostname"); strings.TrimSpace(h) != hostname {
		t.Errorf("hostname %q, want the fetched meta-data's %q", h, hostname)
	}

	mu.Lock()
	got := strings.Join(fetched, " ")
	mu.Unlock()

	// The embedded config comes first, so user-data is not asked for.
	if want := "/vmlinuz-amd64 /initramfs-amd64.xz /seed/meta-data /seed/network-config"; got != want {
		t.Errorf("the node fetched %q over HTTP, want iPXE's kernel and initramfs, then the seed's files: %q", got, want)
	}

	n.ok("shutdown")
	n.waitExit(markPowerOff)
}

// cidata writes a NoCloud seed at path as Proxmox and virt-install make
// one: an ISO labelled cidata (xorriso's mkisofs, Joliet and Rock Ridge
// names) holding files.
func cidata(t testing.TB, path string, files map[string]string) {
	t.Helper()

	src := filepath.Join(t.TempDir(), "cidata")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if out, err := exec.Command("xorriso", "-as", "mkisofs", "-o", path, "-V", "cidata", "-J", "-r", src).CombinedOutput(); err != nil {
		t.Fatalf("xorriso -as mkisofs: %v\n%s", err, out)
	}
}

// imageGrown waits for the first boot of a disk image to fit its GPT to
// the node's disk, and checks that EPHEMERAL (vda6) took the rest of it.
func (n *node) imageGrown() {
	n.t.Helper()

	n.wait(fmt.Sprintf("[talos] fitted the partition table to vda (%s): EPHEMERAL grew from 1.0 MiB to ", humanize.IBytes(diskSize)), bootTimeout)
}

// ephemeralFillsDisk checks, on a running node, that EPHEMERAL (vda6)
// ends at the disk's last whole MiB: everything the image did not take.
func (n *node) ephemeralFillsDisk() {
	n.t.Helper()

	start, _ := strconv.ParseInt(strings.TrimSpace(n.ok("read", "/sys/class/block/vda6/start")), 10, 64)
	size, _ := strconv.ParseInt(strings.TrimSpace(n.ok("read", "/sys/class/block/vda6/size")), 10, 64)

	if end, want := (start+size)*512, int64(diskSize-disk.MiB); end != want {
		n.t.Errorf("EPHEMERAL (vda6) ends at byte %d, want %d: the image did not grow to the disk", end, want)
	}

	if mounts := n.ok("read", "/proc/mounts"); !strings.Contains(mounts, "/dev/vda6 /var ") {
		n.t.Errorf("EPHEMERAL is not /var:\n%s", mounts)
	}
}

// TestMetalNoCloud is the raw disk image (talosbox imager metal
// --platform nocloud, zstd) written to a bigger disk and booted on
// SeaBIOS, with a NoCloud seed on a second disk. The node grows EPHEMERAL
// to the disk's end; user-data is the machine config, so the node comes
// up without apply-config and formats the image's empty STATE;
// network-config v2 gives the NIC (matched by its MAC address) a static
// address, gateway and resolver instead of slirp's DHCP lease, and
// meta-data the hostname. TestMetalUpgrade boots the same image on UEFI.
func TestMetalNoCloud(t *testing.T) {
	const (
		ip       = "10.0.2.77"
		hostname = "cidata-node"
	)

	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	inst := pull(t, upgradeInstallers)

	dir := t.TempDir()
	img := filepath.Join(dir, "metal-amd64.raw.zst")
	buildMedia(t, bin, "metal", inst.initramfs, img, "--platform", "nocloud")

	n := newNode(t, nodeOptions{diskImage: img, guestIP: ip, seed: filepath.Join(dir, "seed.iso")})

	cfg, err := os.ReadFile(n.genConfig("nocloud"))
	if err != nil {
		t.Fatal(err)
	}

	cidata(t, n.seed, map[string]string{
		"user-data": string(cfg),
		"meta-data": "instance-id: iid-nocloud-1\nlocal-hostname: " + hostname + "\n",
		// QEMU's first NIC has this MAC when none is given.
		"network-config": `version: 2
ethernets:
  nic0:
    match:
      macaddress: "52:54:00:12:34:56"
    set-name: eth0
    addresses: [` + ip + `/24]
    gateway4: 10.0.2.2
    nameservers:
      addresses: [10.0.2.3]
`,
	})

	n.boot()
	n.wait("Booting `A - talosbox ("+inst.v1+")'", bootTimeout)
	n.imageGrown()
	n.wait("[talos] nocloud: the seed on /dev/vdb: user-data", bootTimeout)
	n.wait("[talos] loaded config from the NoCloud seed (user-data)", bootTimeout)
	n.wait(markServices, servicesTimeout)
	t.Logf("SeaBIOS: the disk image, QEMU start to services up: %.1fs", time.Since(n.started).Seconds())

	// The API answers through the forward to the static address.
	addrs := n.ok("get", "addresses")
	if !strings.Contains(addrs, "eth0/"+ip+"/24") || strings.Contains(addrs, "10.0.2.15") {
		t.Errorf("addresses: want the network-config's %s on eth0 and no DHCP lease:\n%s", ip, addrs)
	}

	if routes := n.ok("get", "routes"); !strings.Contains(routes, "10.0.2.2") {
		t.Errorf("routes: no default route via the network-config's gateway 10.0.2.2:\n%s", routes)
	}

	if h := n.ok("read", "/proc/sys/kernel/hostname"); strings.TrimSpace(h) != hostname {
		t.Errorf("hostname %q, want meta-data's %q", h, hostname)
	}

	if r := n.ok("read", "/etc/resolv.conf"); !strings.Contains(r, "nameserver 10.0.2.3") {
		t.Errorf("resolv.conf:\n%s", r)
	}

	if out := n.ok("read", "/proc/cmdline"); !strings.Contains(out, "BOOT_IMAGE=/A/vmlinuz talos.platform=nocloud console=ttyS0 console=tty0") {
		t.Errorf("the kernel command line: %q, want the image's grub.cfg's", out)
	}

	n.ephemeralFillsDisk()

	if mounts := n.ok("read", "/proc/mounts"); !strings.Contains(mounts, "/dev/vda5 ") {
		t.Errorf("the image's STATE (vda5) is not mounted:\n%s", mounts)
	}

	n.ok("shutdown")
	n.waitExit(markPowerOff)
}
