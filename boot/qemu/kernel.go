// Package qemu boots test guests under QEMU: it finds the kernel unpacked
// by scripts/fetch-kernel.sh, starts qemu-system-x86_64 with the command
// shape these machines need (TCG: they offer no usable KVM; virtio-net
// without option ROM; virtio-rng, without which getrandom blocks for
// minutes; panic=-1 -no-reboot, so that every boot is a new process), links guests into private L2 segments over
// loopback UDP, follows each console line by line for markers, and drives
// the machine over QMP (link state, quit).
//
// It is the harness of the networking guest tests (boot/guesttest) and
// the start of the metal boot tests, which add disks and boot the real
// machined.
package qemu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// KernelDirEnv names the directory scripts/fetch-kernel.sh unpacked the
// kernel into; <repository>/_out/kernel when unset.
const KernelDirEnv = "TALOSBOX_KERNEL_DIR"

// Kernel is an unpacked kernel package.
type Kernel struct {
	// Image is the bootable bzImage (boot/vmlinuz-<release>).
	Image string
	// Release is the kernel release, as uname -r reports it.
	Release string
	// ModulesDir is lib/modules/<release>.
	ModulesDir string
}

// RepoRoot finds the repository root (the directory with go.mod) from
// the working directory up.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}

	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}

		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it")
		}

		dir = parent
	}
}

// KernelDir is where the tests look for the kernel: $TALOSBOX_KERNEL_DIR,
// else <repository>/_out/kernel.
func KernelDir() (string, error) {
	if d := os.Getenv(KernelDirEnv); d != "" {
		return d, nil
	}

	root, err := RepoRoot()
	if err != nil {
		return "", err
	}

	return filepath.Join(root, "_out", "kernel"), nil
}

// FindKernel returns the kernel unpacked in dir. With several releases
// there (an older one left behind by an update), the newest wins.
func FindKernel(dir string) (*Kernel, error) {
	hint := fmt.Sprintf("run scripts/fetch-kernel.sh %s (or set %s)", dir, KernelDirEnv)

	images, err := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if err != nil {
		return nil, err
	}

	var found []*Kernel

	for _, img := range images {
		rel := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
		mods := filepath.Join(dir, "lib", "modules", rel)

		if st, err := os.Stat(filepath.Join(mods, "kernel")); err == nil && st.IsDir() {
			found = append(found, &Kernel{Image: img, Release: rel, ModulesDir: mods})
		}
	}

	if len(found) == 0 {
		return nil, fmt.Errorf("no kernel with its modules in %s: %s", dir, hint)
	}

	sort.Slice(found, func(i, j int) bool { return versionLess(found[i].Release, found[j].Release) })

	return found[len(found)-1], nil
}

// DefaultKernel is FindKernel(KernelDir()).
func DefaultKernel() (*Kernel, error) {
	dir, err := KernelDir()
	if err != nil {
		return nil, err
	}

	return FindKernel(dir)
}

// versionLess compares releases like 6.1.0-56-cloud-amd64 numerically
// where both sides have digits.
func versionLess(a, b string) bool {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}

	pa, pb := split(a), split(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] == pb[i] {
			continue
		}

		var na, nb int
		_, ea := fmt.Sscanf(pa[i], "%d", &na)
		_, eb := fmt.Sscanf(pb[i], "%d", &nb)

		if ea == nil && eb == nil && na != nb {
			return na < nb
		}

		return pa[i] < pb[i]
	}

	return len(pa) < len(pb)
}
