//go:build e2e

package metaltest

// One guest on its disk image: boot it, follow its console, run the real
// talosctl against it through the port forward.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/bootmedia"
)

// freePort finds a loopback TCP port for the forward. QEMU binds it a
// moment later; another process taking it first would make QEMU fail to
// start, not misroute.
func freePort() (int, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()

	return l.Addr().(*net.TCPAddr).Port, nil //nolint:forcetypeassert // tcp4
}

// sparseDisk makes an empty raw disk image, as `truncate -s` does.
func sparseDisk(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}

	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}

	return f.Close()
}

// node is one guest, booted again on the same disk after each reboot.
type node struct {
	t      testing.TB
	bin    string // talosbox on the host: talosctl
	init   string // the guest's initramfs
	dir    string
	disk   string // raw image; "" for none
	disk2  string // the second disk's image; "" for none
	port   int
	append []string
	tc     string // talosconfig
	uuid   string // SMBIOS system UUID, the same on every boot

	memoryMiB int
	forwards  map[int]int

	// fromDisk boots the next boots through the firmware and the GRUB
	// the install wrote, instead of QEMU's -kernel (or the ISO).
	fromDisk  bool
	reachHost bool
	// cdrom is an ISO the node boots from through its firmware until
	// fromDisk; uefi boots on OVMF instead of SeaBIOS (NVRAM in dir);
	// netBoot boots through iPXE from the network.
	cdrom             string
	uefi              bool
	netBoot           bool
	tftpDir, bootFile string
	seed, guestIP     string
	serial            string
	qemuArgs          []string

	vm      *qemu.VM
	boots   int
	started time.Time
}

// nodeOptions shape a node.
type nodeOptions struct {
	init string // the guest's /init; the talosbox binary when empty
	disk bool   // attach a fresh sparse disk of diskSize
	// userDisk attaches a second, smaller disk (/dev/vdb) for
	// machine.disks.
	userDisk bool
	append   []string // more kernel parameters
	// locked: the caller holds the guest lock (qemu.Exclusive) for
	// several nodes it boots one after the other.
	locked bool
	// containers: the initramfs carries the container runtime (runc, the
	// CNI plugins) and the Kubernetes kernel modules, as a node's does.
	containers bool
	// image is a prebuilt initramfs to boot instead of one made from init.
	image string
	// memoryMiB is the guest's memory (qemu's 512 MiB when zero).
	memoryMiB int
	// forwards are more guest TCP ports forwarded from 127.0.0.1 (host
	// port → guest port); the guest may then reach the host at 10.0.2.2.
	forwards map[int]int
	// reachHost lets the guest reach the host at 10.0.2.2 (slirp's
	// restrict=off) without forwards of its own.
	reachHost bool
	// cdrom boots an ISO through the firmware instead of -kernel.
	cdrom string
	// uefi: OVMF instead of SeaBIOS.
	uefi bool
	// netBoot: PXE through iPXE, with slirp's TFTP serving tftpDir and
	// its DHCP naming bootFile.
	netBoot           bool
	tftpDir, bootFile string
	// seed is a read-only disk after the others (a NoCloud cidata ISO).
	seed string
	// guestIP is the address the API forward goes to when the node does
	// not take slirp's DHCP lease (10.0.2.15).
	guestIP string
	// serial is the SMBIOS system serial number.
	serial string
	// qemuArgs go to QEMU as they are (a second serial port).
	qemuArgs []string
	// diskImage makes the disk from a disk image (talosbox imager metal,
	// raw or .zst) grown to diskSize, which the node boots from through
	// its firmware from the first boot on.
	diskImage string
}

// newNode prepares a node and, unless the caller holds it, takes the
// host-wide guest lock for the rest of the test (the node's reboots
// included).
func newNode(t testing.TB, opts nodeOptions) *node {
	t.Helper()

	if err := qemu.Available(); err != nil {
		t.Fatalf("metal tests need QEMU: %v", err)
	}

	if _, err := kernel(); err != nil {
		t.Fatalf("metal tests need a kernel: %v", err)
	}

	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}

	init := opts.init
	if init == "" {
		init = bin
	}

	mkImage := image
	if opts.containers {
		mkImage = containersImage
	}

	img := opts.image
	if img == "" {
		if img, err = mkImage(init); err != nil {
			t.Fatal(err)
		}
	}

	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}

	n := &node{t: t, bin: bin, init: img, dir: t.TempDir(), port: port, append: append(append([]string(nil), baseAppend...), opts.append...),
		memoryMiB: opts.memoryMiB, forwards: opts.forwards, reachHost: opts.reachHost, uuid: uuid.NewString(),
		cdrom: opts.cdrom, uefi: opts.uefi, netBoot: opts.netBoot, tftpDir: opts.tftpDir, bootFile: opts.bootFile,
		seed: opts.seed, guestIP: opts.guestIP, serial: opts.serial, qemuArgs: opts.qemuArgs}

	if opts.disk {
		n.disk = filepath.Join(n.dir, "disk.img")
		if err := sparseDisk(n.disk, diskSize); err != nil {
			t.Fatal(err)
		}
	}

	if opts.diskImage != "" {
		n.disk, n.fromDisk = filepath.Join(n.dir, "disk.img"), true
		if err := bootmedia.ExpandImage(opts.diskImage, n.disk, diskSize); err != nil {
			t.Fatal(err)
		}

		if err := os.Truncate(n.disk, diskSize); err != nil {
			t.Fatal(err)
		}
	}

	if opts.userDisk {
		n.disk2 = filepath.Join(n.dir, "disk2.img")
		if err := sparseDisk(n.disk2, 256<<20); err != nil {
			t.Fatal(err)
		}
	}

	if !opts.locked {
		release, err := qemu.Exclusive()
		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(release) // after the VM's own cleanup kills it
	}

	return n
}

// boot starts QEMU: the first boot, or the next one after the guest
// rebooted (QEMU exited). It returns when QEMU runs.
func (n *node) boot() {
	n.t.Helper()

	n.boots++

	k, err := kernel()
	if err != nil {
		n.t.Fatal(err)
	}

	var extra []string
	if n.disk != "" {
		extra = append(extra, "-drive", "file="+n.disk+",if=virtio,format=raw,cache=unsafe")
	}

	if n.disk2 != "" {
		extra = append(extra, "-drive", "file="+n.disk2+",if=virtio,format=raw,cache=unsafe")
	}

	if n.seed != "" {
		extra = append(extra, "-drive", "file="+n.seed+",if=virtio,format=raw,readonly=on")
	}

	extra = append(extra, n.qemuArgs...)

	name := fmt.Sprintf("boot%d", n.boots)
	started := time.Now()
	n.started = started

	cfg := qemu.Config{
		Name:      name,
		UUID:      n.uuid,
		Serial:    n.serial,
		Kernel:    k.Image,
		Initrd:    n.init,
		Append:    n.append,
		NICs:      []qemu.NIC{{ID: "n0", Backend: n.netBackend(), BootROM: n.netBoot && !n.fromDisk}},
		MemoryMiB: n.memoryMiB,
		ExtraArgs: extra,
		NetBoot:   n.netBoot && !n.fromDisk,
	}

	switch {
	case n.fromDisk || n.netBoot:
		cfg.Kernel = ""
	case n.cdrom != "":
		cfg.Kernel, cfg.CDROM = "", n.cdrom
	}

	if n.uefi {
		cfg.UEFIVars = filepath.Join(n.dir, "OVMF_VARS.fd")
	}

	cfg.Dir = filepath.Join(n.dir, name)
	cfg.LogLine = func(l string) { n.t.Logf("%s %6.2fs| %s", name, time.Since(started).Seconds(), l) }

	vm, err := qemu.Start(cfg)
	if err != nil {
		n.t.Fatal(err)
	}

	n.vm = vm
	n.t.Cleanup(vm.Kill)
}

// netBackend is the node's slirp NIC: the API forward, and the test's
// own forwards, with which the guest may reach the host (restrict off).
func (n *node) netBackend() string {
	b := fmt.Sprintf("user,hostfwd=tcp:127.0.0.1:%d-%s:50000", n.port, n.guestIP)
	if n.netBoot {
		b += ",tftp=" + n.tftpDir + ",bootfile=" + n.bootFile
	}
	if len(n.forwards) == 0 && !n.reachHost {
		return "user,restrict=on," + strings.TrimPrefix(b, "user,")
	}

	for _, host := range slices.Sorted(maps.Keys(n.forwards)) {
		b += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", host, n.forwards[host])
	}

	return b
}

// wait waits for a console line containing s and returns it from s on.
func (n *node) wait(s string, timeout time.Duration) string {
	n.t.Helper()

	m := n.waitRe(regexp.MustCompile(regexp.QuoteMeta(s)+".*"), timeout)

	return m[0]
}

// waitRe waits for a console line matching re.
func (n *node) waitRe(re *regexp.Regexp, timeout time.Duration) []string {
	n.t.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	m, err := n.vm.WaitFor(ctx, re)
	if err != nil {
		n.t.Fatal(err)
	}

	return m
}

// console is this boot's console so far.
func (n *node) console() string { return strings.Join(n.vm.Lines(), "\n") }

// waitExit waits for QEMU to exit on its own and checks that the guest's
// last console words were want ("[talos] rebooting", "[talos] powering off").
func (n *node) waitExit(want string) {
	n.t.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
	defer cancel()

	if err := n.vm.Wait(ctx); err != nil {
		n.t.Fatalf("%v\n%s", err, n.vm.Tail(30))
	}

	n.checkConsole()

	lines := n.vm.Lines()
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-5; i-- {
		if strings.Contains(lines[i], want) {
			return
		}
	}

	n.t.Fatalf("QEMU exited, but the console does not end with %q\n%s", want, n.vm.Tail(30))
}

// kernelTrouble are console lines no boot may print.
var kernelTrouble = []string{"EXT4-fs error", "Kernel panic", "BUG:", "WARNING:", "panic: ", "goroutine "}

// kernelNoise are kernel warnings that are not the node's trouble. The
// balloon driver's free page reporting (cluster create qemu gives guests
// free-page-reporting=on) warns once when it cannot queue a report, as
// it can on a guest short of memory while it writes an installer: it
// only skips handing those free pages back to the host.
var kernelNoise = []string{"virtballoon_free_page_report"}

// consoleTrouble says whether a console line reports trouble, and
// whether it is known noise (logged, not failed).
func consoleTrouble(line string) (trouble, noise bool) {
	if !slices.ContainsFunc(kernelTrouble, func(bad string) bool { return strings.Contains(line, bad) }) {
		return false, false
	}

	return true, slices.ContainsFunc(kernelNoise, func(n string) bool { return strings.Contains(line, n) })
}

// checkConsole fails the test if the kernel or machined reported trouble
// on this boot's console.
func (n *node) checkConsole() {
	n.t.Helper()

	for _, l := range n.vm.Lines() {
		switch trouble, noise := consoleTrouble(l); {
		case noise:
			n.t.Logf("boot %d: console line %q (known noise)", n.boots, l)
		case trouble:
			n.t.Errorf("boot %d: console line %q", n.boots, l)
		}
	}
}

// talosctl runs the real talosctl against the node through the forward.
func (n *node) talosctl(args ...string) (stdout, stderr string, err error) {
	return n.talosctlAsync(commandTimeout, args...)()
}

// talosctlAsync starts talosctl and returns what waits for it: for a
// command that outlives a reboot the test drives (upgrade --wait).
func (n *node) talosctlAsync(timeout time.Duration, args ...string) func() (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)

	// With --insecure talosctl dials each node itself, so the forward is
	// the node; otherwise it is the endpoint, and the node is the guest's
	// own loopback (apid serves it locally).
	full := []string{"talosctl", "-e", fmt.Sprintf("127.0.0.1:%d", n.port)}
	if !slices.Contains(args, "--insecure") {
		full = append(full, "-n", "127.0.0.1")
	}

	if n.tc != "" {
		full = append(full, "--talosconfig", n.tc)
	}

	full = append(full, args...)

	cmd := exec.CommandContext(ctx, n.bin, full...)
	cmd.Env = append(os.Environ(), "HOME="+n.dir)

	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e

	if err := cmd.Start(); err != nil {
		cancel()

		return func() (string, string, error) { return "", "", err }
	}

	return func() (string, string, error) {
		defer cancel()

		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("talosctl %s: %w", strings.Join(args, " "), err)
		}

		return o.String(), e.String(), err
	}
}

// ok runs talosctl and fails the test unless it succeeds.
func (n *node) ok(args ...string) string {
	n.t.Helper()

	out, errOut, err := n.talosctl(args...)
	if err != nil {
		n.t.Fatalf("%v\n%s%s", err, out, errOut)
	}

	return out
}

// until retries check until it passes or timeout ends, each try bounded
// by talosctl's own deadline. Slirp accepts a forwarded connection before
// the guest listens, so the first tries may hang until that deadline.
func (n *node) until(what string, timeout time.Duration, check func() error) {
	n.t.Helper()

	switch err := waitUntil(timeout, n.vm.Done(), check); {
	case errors.Is(err, errStopped):
		n.t.Fatalf("%s: QEMU exited: %v\n%s", what, err, n.vm.Tail(30))
	case err != nil:
		n.t.Fatalf("%s: not within %s: %v\n%s", what, timeout, err, n.vm.Tail(30))
	}
}

// errStopped means waitUntil's stop channel closed first.
var errStopped = errors.New("stopped")

// waitUntil retries check every 250 ms until it passes (nil), timeout
// ends, or stop closes (nil: never); it returns the last error, wrapped
// with errStopped when stop ended the wait.
func waitUntil(timeout time.Duration, stop <-chan struct{}, check func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()

	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()

	for {
		last := check()
		if last == nil {
			return nil
		}

		select {
		case <-deadline.C:
			return last
		case <-stop:
			return fmt.Errorf("%w: %w", errStopped, last)
		case <-tick.C:
		}
	}
}

// maintenanceAnswers waits until the maintenance API answers `version`.
func (n *node) maintenanceAnswers(timeout time.Duration) {
	n.t.Helper()

	n.until("maintenance API", timeout, func() error {
		out, errOut, err := n.talosctl("version", "--insecure")
		if err != nil {
			return fmt.Errorf("%w: %s", err, errOut)
		}

		if !strings.Contains(out, "maintenance") {
			return errors.New("not in maintenance mode:\n" + out)
		}

		return nil
	})
}

// genConfig writes controlplane.yaml and talosconfig for a node whose
// API is reached through the forward; it returns controlplane.yaml.
func (n *node) genConfig(name string, extra ...string) string {
	n.t.Helper()

	dir := filepath.Join(n.dir, "config")

	// The endpoint is the node's slirp address; the install disk the
	// virtio disk (gen config's default is /dev/sda).
	args := append([]string{"talosctl", "gen", "config", name, "https://10.0.2.15:6443", "--install-disk", "/dev/vda", "-o", dir}, extra...)

	out, err := exec.Command(n.bin, args...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("gen config: %v\n%s", err, out)
	}

	n.tc = filepath.Join(dir, "talosconfig")

	return filepath.Join(dir, "controlplane.yaml")
}
