//go:build e2e

package metaltest

// What every boot needs, built once per test process: the binary, the
// kernel's modules and the initramfs.

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/initramfs"
)

// Deadlines per step. A boot to maintenance mode takes seconds under TCG;
// the machine's speed drifts by ±50% from run to run, and the first boot
// with a config formats a few GiB.
const (
	bootTimeout     = 2 * time.Minute // QEMU start to a console marker
	servicesTimeout = 3 * time.Minute // apply-config to every service up
	commandTimeout  = 30 * time.Second
	exitTimeout     = time.Minute // a reboot or power-off to QEMU's exit
)

// diskSize holds Talos's layout (about 4.2 GiB) with room to spare; the
// image is sparse, so it costs what is written.
const diskSize = 6 << 30

// guestModules are what the node's initramfs carries: the NIC, the disk
// and the entropy source (without it getrandom blocks for minutes under
// TCG), and dm-crypt with the templates of aes-xts-plain64 for encrypted
// volumes, with their dependencies; and softdog, the watchdog a
// WatchdogTimerConfig drives (it is armed only when opened).
var guestModules = []string{"virtio_pci", "virtio_net", "virtio_blk", "virtio_rng", "dm_crypt", "xts", "ecb", "softdog"}

// baseAppend is every node's kernel command line: no ip=, so the node
// takes DHCP on its first NIC by default as a user's would, and a fatal
// error powers off at once so that a broken image fails a test in
// seconds.
var baseAppend = []string{"quiet", "talosbox.fatal=poweroff"}

var (
	workDirMu sync.Mutex
	workDir   string
)

// work is a directory for what the tests build, removed by TestMain.
func work() (string, error) {
	workDirMu.Lock()
	defer workDirMu.Unlock()

	if workDir == "" {
		d, err := os.MkdirTemp("", "talosbox-metal-")
		if err != nil {
			return "", err
		}

		workDir = d
	}

	return workDir, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	prebuild()

	code := m.Run()

	workDirMu.Lock()
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	workDirMu.Unlock()

	os.Exit(code)
}

// binary is the real talosbox, built as users build it (`make build`),
// once per test process.
var binary = sync.OnceValues(func() (string, error) {
	return buildInWork("talosbox", func(root, out string) *exec.Cmd {
		return exec.Command("make", "-s", "-C", root, "build", "OUT="+out)
	})
})

// buildInWork runs the build cmd makes for the output path out (in the
// test process's work dir) from the repository root, and returns out.
func buildInWork(name string, cmd func(root, out string) *exec.Cmd) (string, error) {
	root, err := qemu.RepoRoot()
	if err != nil {
		return "", err
	}

	dir, err := work()
	if err != nil {
		return "", err
	}

	out := filepath.Join(dir, name)
	c := cmd(root, out)
	c.Dir = root

	if b, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", name, err, b)
	}

	return out, nil
}

var kernel = sync.OnceValues(qemu.DefaultKernel)

var modules = sync.OnceValues(func() (*initramfs.Modules, error) {
	k, err := kernel()
	if err != nil {
		return nil, err
	}

	return initramfs.OpenModules(k.ModulesDir)
})

// images caches one initramfs per init binary.
var (
	imagesMu sync.Mutex
	images   = map[string]string{}
)

// image is an uncompressed initramfs with init as /init and the guest
// modules (uncompressed loads fastest under TCG: the guest kernel's
// decompressor is emulated, QEMU's copy is not).
func image(init string) (string, error) {
	imagesMu.Lock()
	defer imagesMu.Unlock()

	if p, ok := images[init]; ok {
		return p, nil
	}

	mods, err := modules()
	if err != nil {
		return "", err
	}

	a := initramfs.New()
	if err := a.File("init", init, 0o755); err != nil {
		return "", err
	}

	if _, err := a.Modules(mods, guestModules...); err != nil {
		return "", err
	}

	p := init + ".cpio"
	if err := a.WriteFile(p); err != nil {
		return "", err
	}

	images[init] = p

	return p, nil
}

// containersImage is image plus what a node needs to run containers: runc
// and the CNI plugins that make images built (the tests fail without
// them, as make test builds them first), and the Kubernetes modules.
func containersImage(init string) (string, error) {
	imagesMu.Lock()
	defer imagesMu.Unlock()

	key := init + "+containers"
	if p, ok := images[key]; ok {
		return p, nil
	}

	mods, err := modules()
	if err != nil {
		return "", err
	}

	root, err := qemu.RepoRoot()
	if err != nil {
		return "", err
	}

	rt, err := initramfs.RuntimeIn(filepath.Join(root, "_out", "images"))
	if err != nil {
		return "", err
	}

	files, err := rt.Files()
	if err != nil {
		return "", err
	}

	a := initramfs.New()
	if err := a.File("init", init, 0o755); err != nil {
		return "", err
	}

	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := a.File(name, files[name], 0o755); err != nil {
			return "", err
		}
	}

	if _, err := a.Modules(mods, append(append([]string{"overlay"}, guestModules...), initramfs.KubernetesModules...)...); err != nil {
		return "", err
	}

	p := init + ".containers.cpio"
	if err := a.WriteFile(p); err != nil {
		return "", err
	}

	images[key] = p

	return p, nil
}
