//go:build e2e

package guesttest

// The host side: build the guest init and images, boot guest pairs,
// collect the console markers.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/initramfs"
)

// bootTimeout bounds one test's guests from QEMU start to their results.
// A guest boots in 3 to 10 s under TCG; the machine's speed drifts by
// ±50% and two guests share two cores.
const bootTimeout = 3 * time.Minute

// guestDeadline bounds each wait inside a guest (it then fails and
// powers off, which the host sees at once).
const guestDeadline = 90 * time.Second

// baseModules are what every guest needs for its NICs and entropy.
var baseModules = []string{"virtio_pci", "virtio_net", "virtio_rng"}

var (
	resultRe = regexp.MustCompile(markResult + ` (ok|fail): (.*)$`)

	guestDirMu sync.Mutex
	guestDir   string
)

// goTool finds the go command that is running the tests.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}

	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}

	return "/usr/local/go/bin/go"
}

// guestBinary builds this package's test binary static, once per test
// process: it is every guest's /init.
var guestBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "talosbox-guest-")
	if err != nil {
		return "", err
	}

	guestDirMu.Lock()
	guestDir = dir
	guestDirMu.Unlock()

	out := filepath.Join(dir, "init")
	cmd := exec.Command(goTool(), "test", "-c", "-o", out, "-ldflags=-s -w", ".")

	// The guest binary is static and never under the race detector,
	// whatever the host's tests run with.
	env := []string{"CGO_ENABLED=0"}

	for _, e := range os.Environ() {
		switch {
		case strings.HasPrefix(e, "CGO_ENABLED="):
		case strings.HasPrefix(e, "GOFLAGS="):
			var keep []string

			for _, f := range strings.Fields(strings.TrimPrefix(e, "GOFLAGS=")) {
				if f != "-race" && !strings.HasPrefix(f, "-cover") {
					keep = append(keep, f)
				}
			}

			env = append(env, "GOFLAGS="+strings.Join(keep, " "))
		default:
			env = append(env, e)
		}
	}

	cmd.Env = env

	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the guest init (%s): %w\n%s", strings.Join(cmd.Args, " "), err, b)
	}

	return out, nil
})

func cleanupGuestBinary() {
	guestDirMu.Lock()
	defer guestDirMu.Unlock()

	if guestDir != "" {
		os.RemoveAll(guestDir)
	}
}

var defaultKernel = sync.OnceValues(func() (*qemu.Kernel, error) {
	return qemu.DefaultKernel()
})

var moduleTree = sync.OnceValues(func() (*initramfs.Modules, error) {
	k, err := defaultKernel()
	if err != nil {
		return nil, err
	}

	return initramfs.OpenModules(k.ModulesDir)
})

// env is what every guest test needs; it fails the test clearly when
// QEMU or the kernel is missing.
type env struct {
	t      *testing.T
	kernel *qemu.Kernel
	mods   *initramfs.Modules
	init   string
	dir    string
	// segments counts the switches started, to name their directories.
	segments int
}

func newEnv(t *testing.T) *env {
	t.Helper()

	if err := qemu.Available(); err != nil {
		t.Fatalf("guest tests need QEMU: %v", err)
	}

	if err := qemu.SwitchAvailable(); err != nil {
		t.Fatalf("guest tests need a switch for their segments: %v", err)
	}

	k, err := defaultKernel()
	if err != nil {
		t.Fatalf("guest tests need a kernel: %v", err)
	}

	mods, err := moduleTree()
	if err != nil {
		t.Fatal(err)
	}

	init, err := guestBinary()
	if err != nil {
		t.Fatal(err)
	}

	return &env{t: t, kernel: k, mods: mods, init: init, dir: t.TempDir()}
}

// segment starts a private Ethernet segment (a vde_switch) that ends
// with the test. hub floods every frame to every port as it is: the LACP
// test's slow-protocol frames, and the VLAN test's tagged frames (a
// learning vde_switch drops tags of VLANs its ports are not members of).
func (e *env) segment(hub bool) *qemu.Switch {
	e.t.Helper()

	e.segments++

	sw, err := qemu.StartSwitch(qemu.SwitchOptions{Dir: filepath.Join(e.dir, fmt.Sprintf("sw%d", e.segments)), Hub: hub})
	if err != nil {
		e.t.Fatal(err)
	}

	e.t.Cleanup(func() {
		if err := sw.Stop(); err != nil {
			e.t.Error(err)
		}
	})

	return sw
}

// node is one guest of a test.
type node struct {
	spec guestSpec
	nics []qemu.NIC
	// extra goes to QEMU as it is (qemu.Config.ExtraArgs).
	extra []string
}

// image writes the guest's initramfs: the init, its modules and spec.
func (e *env) image(dir string, spec guestSpec) (string, error) {
	a := initramfs.New()

	if err := a.File("init", e.init, 0o755); err != nil {
		return "", err
	}

	if _, err := a.Modules(e.mods, spec.Modules...); err != nil {
		return "", err
	}

	data, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}

	a.Bytes(specPath, data, 0o644)

	p := filepath.Join(dir, "initramfs.cpio")

	return p, a.WriteFile(p)
}

// boot starts the guests of one test (two: at most two run at a time on
// these machines, which qemu.Exclusive enforces across packages) and
// kills them when the test ends.
func (e *env) boot(nodes ...node) []*qemu.VM {
	e.t.Helper()

	release, err := qemu.Exclusive()
	if err != nil {
		e.t.Fatal(err)
	}

	e.t.Cleanup(release) // runs after the VMs' own cleanups kill them

	vms := make([]*qemu.VM, 0, len(nodes))

	for _, n := range nodes {
		n.spec.Modules = append(append([]string(nil), baseModules...), n.spec.Modules...)
		n.spec.Deadline = guestDeadline

		dir := filepath.Join(e.dir, n.spec.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			e.t.Fatal(err)
		}

		img, err := e.image(dir, n.spec)
		if err != nil {
			e.t.Fatalf("%s: initramfs: %v", n.spec.Name, err)
		}

		name := n.spec.Name
		vm, err := qemu.Start(qemu.Config{
			Name:      name,
			Kernel:    e.kernel.Image,
			Initrd:    img,
			Append:    []string{"quiet"},
			NICs:      n.nics,
			ExtraArgs: n.extra,
			Dir:       dir,
			LogLine:   func(l string) { e.t.Logf("%s| %s", name, l) },
		})
		if err != nil {
			e.t.Fatal(err)
		}

		e.t.Cleanup(vm.Kill)

		vms = append(vms, vm)
	}

	return vms
}

// waitAll waits for a line matching re on every guest and returns each
// one's submatches.
func waitAll(ctx context.Context, t *testing.T, re *regexp.Regexp, vms ...*qemu.VM) [][]string {
	t.Helper()

	out := make([][]string, len(vms))
	errs := make([]error, len(vms))

	var wg sync.WaitGroup

	for i, vm := range vms {
		wg.Go(func() { out[i], errs[i] = vm.WaitFor(ctx, re) })
	}

	wg.Wait()

	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	return out
}

// results waits for every guest's result line and fails the test for
// each "fail".
func results(ctx context.Context, t *testing.T, vms ...*qemu.VM) {
	t.Helper()

	for i, m := range waitAll(ctx, t, resultRe, vms...) {
		if m[1] != "ok" {
			t.Errorf("guest %d failed: %s\n%s", i, m[2], vms[i].Tail(60))
			continue
		}

		t.Logf("guest %d: %s", i, m[2])
	}
}

// machineConfig wraps machine.network.interfaces YAML (indented for its
// place) in the smallest config networkd accepts.
func machineConfig(interfaces string) string {
	return "version: v1alpha1\nmachine:\n  type: worker\n  network:\n    interfaces:\n" + interfaces
}
