package initramfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNoKernel means a kernel directory holds no unpacked kernel (or does
// not exist): scripts/fetch-kernel.sh makes one.
var ErrNoKernel = errors.New("no unpacked kernel")

// ErrSeveralKernels means a kernel directory holds more than one release
// and none was named.
var ErrSeveralKernels = errors.New("several kernel releases")

// Kernel is an unpacked kernel package, as scripts/fetch-kernel.sh leaves
// it: DIR/boot/vmlinuz-<release> and DIR/lib/modules/<release>/.
type Kernel struct {
	// Dir is the unpacked package's root.
	Dir string
	// Release is the kernel release, as uname -r reports it.
	Release string
	// Image is boot/vmlinuz-<release>, or "" when the package's image was
	// not kept (only the modules go into an initramfs).
	Image string
	// ModulesDir is lib/modules/<release>.
	ModulesDir string
}

// FindKernel finds the kernel release in dir, or the only one there when
// release is empty. A release counts when lib/modules/<release>/kernel
// exists. The errors match ErrNoKernel or ErrSeveralKernels.
func FindKernel(dir, release string) (*Kernel, error) {
	base := filepath.Join(dir, "lib", "modules")

	ents, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s: %s does not exist", ErrNoKernel, dir, base)
	}

	if err != nil {
		return nil, fmt.Errorf("find kernel in %s: %w", dir, err)
	}

	var releases []string

	for _, e := range ents {
		if st, err := os.Stat(filepath.Join(base, e.Name(), "kernel")); err == nil && st.IsDir() {
			releases = append(releases, e.Name())
		}
	}

	slices.Sort(releases)

	switch {
	case len(releases) == 0:
		return nil, fmt.Errorf("%w in %s: no lib/modules/<release>/kernel", ErrNoKernel, dir)
	case release != "" && !slices.Contains(releases, release):
		return nil, fmt.Errorf("%w %s in %s (it has %s)", ErrNoKernel, release, dir, strings.Join(releases, ", "))
	case release == "" && len(releases) > 1:
		return nil, fmt.Errorf("%w in %s: %s", ErrSeveralKernels, dir, strings.Join(releases, ", "))
	case release == "":
		release = releases[0]
	}

	k := &Kernel{Dir: dir, Release: release, ModulesDir: filepath.Join(base, release)}

	if img := filepath.Join(dir, "boot", "vmlinuz-"+release); fileExists(img) {
		k.Image = img
	}

	return k, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
