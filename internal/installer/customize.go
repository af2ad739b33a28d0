package installer

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/initramfs"
)

// The customization flow of the seeds (Talos v0.9's "Customizing the
// Kernel" and "Customizing the Root Filesystem"): a Dockerfile with a
// stage named customization builds FROM an installer image, whose ONBUILD
// triggers copy that stage's files into the image and run this binary to
// rebuild the initramfs with them, after removing the paths --build-arg
// RM names. The result is an installer `talosctl upgrade` installs.
const (
	// BinaryPath is where the installer image keeps this binary, for its
	// ONBUILD trigger to run.
	BinaryPath = "bin/talosbox"
	// CustomizationDir is where the trigger copies the customization
	// stage's files (its whole root).
	CustomizationDir = "customization"
	// SeedKernelPath is where the seeds' Dockerfile copies a custom
	// kernel (COPY ... /usr/install/vmlinuz); Customize moves it to
	// KernelPath.
	SeedKernelPath = "usr/install/vmlinuz"
)

// OnBuild are the installer image's ONBUILD triggers. ARG makes RM an
// environment variable of the RUN step, which reads it.
var OnBuild = []string{
	"ARG RM",
	"COPY --from=customization / /" + CustomizationDir + "/",
	`RUN ["/` + BinaryPath + `", "imager", "customize"]`,
}

// Customization is what Customize applies.
type Customization struct {
	// Root is the installer image's filesystem ("/" in docker build).
	Root string
	// Dir holds the files to add, as they are to be in the node's root
	// filesystem; it is removed afterwards. A missing Dir adds nothing.
	Dir string
	// RM are paths of the node's root filesystem removed (with what is
	// under them) before the files are added.
	RM []string
	// Log gets a line per step.
	Log io.Writer
}

// Customize rebuilds the installer image's initramfs at Root: RM removed,
// Dir's files added (replacing what is there), modules.dep made again
// when kernel modules changed, zstd as make installer writes it. A kernel
// at SeedKernelPath replaces the image's.
func Customize(c Customization) error {
	if c.Log == nil {
		c.Log = io.Discard
	}

	if err := moveSeedKernel(c); err != nil {
		return err
	}

	initrd := filepath.Join(c.Root, InitramfsPath)

	f, err := os.Open(initrd)
	if err != nil {
		return fmt.Errorf("customize: %w", err)
	}

	a, err := initramfs.Read(f)
	f.Close()

	if err != nil {
		return fmt.Errorf("customize /%s: %w", InitramfsPath, err)
	}

	modulesChanged := false

	for _, p := range c.RM {
		clean := path.Clean("/" + p)
		if clean == "/" || clean == "/init" {
			return fmt.Errorf("customize: RM %q: refusing to remove %s, the node could not boot", p, clean)
		}

		if a.Remove(clean) {
			fmt.Fprintf(c.Log, "customize: removed %s\n", clean)
		} else {
			fmt.Fprintf(c.Log, "customize: RM %s: not in the initramfs\n", clean)
		}

		modulesChanged = modulesChanged || strings.HasPrefix(clean+"/", "/lib/modules/")
	}

	added, err := addTree(a, c.Dir)
	if err != nil {
		return err
	}

	fmt.Fprintf(c.Log, "customize: added %d files from the customization stage\n", len(added))

	if modulesChanged || slices.ContainsFunc(added, func(p string) bool { return strings.HasPrefix(p, "lib/modules/") }) {
		// The image has no /tmp: the scratch space is beside the initramfs.
		if err := refreshModuleDeps(a, filepath.Dir(initrd), c.Log); err != nil {
			return err
		}
	}

	tmp := initrd + ".tmp"

	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}

	if err := a.WriteCompressed(out, initramfs.Zstd); err != nil {
		out.Close()
		os.Remove(tmp)

		return fmt.Errorf("customize: write the initramfs: %w", err)
	}

	if err := out.Close(); err != nil {
		return err
	}

	if err := os.Rename(tmp, initrd); err != nil {
		return err
	}

	if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			return err
		}
	}

	st, _ := os.Stat(initrd)
	fmt.Fprintf(c.Log, "customize: wrote /%s (%d bytes)\n", InitramfsPath, st.Size())

	return nil
}

func moveSeedKernel(c Customization) error {
	seed := filepath.Join(c.Root, SeedKernelPath)
	if _, err := os.Stat(seed); err != nil {
		return nil //nolint:nilerr // no custom kernel: the image's stays
	}

	if err := os.Rename(seed, filepath.Join(c.Root, KernelPath)); err != nil {
		return fmt.Errorf("customize: the custom kernel: %w", err)
	}

	fmt.Fprintf(c.Log, "customize: the kernel is /%s (from /%s)\n", KernelPath, SeedKernelPath)

	return nil
}

// addTree adds every file, directory and symlink under dir to a, at the
// same path; it returns the regular files' paths.
func addTree(a *initramfs.Archive, dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}

	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return nil, nil
	}

	var files []string

	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}

		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}

		rel = filepath.ToSlash(rel)

		info, err := d.Info()
		if err != nil {
			return err
		}

		switch {
		case d.IsDir():
			a.Dir(rel, info.Mode())
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}

			a.Bytes(rel, data, info.Mode())
			files = append(files, rel)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}

			a.Symlink(rel, target)
		default:
			return fmt.Errorf("customize: /%s: only files, directories and symlinks can be added (%s)", rel, info.Mode().Type())
		}

		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("customize: %w", err)
	}

	return files, nil
}

// refreshModuleDeps makes modules.dep again for each kernel release under
// lib/modules, from the modules the archive now holds, so that a module
// the customization added loads by name with its dependencies. The
// modules are laid out under scratch to be read.
func refreshModuleDeps(a *initramfs.Archive, scratch string, log io.Writer) error {
	tmp, err := os.MkdirTemp(scratch, ".modules-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	releases := map[string]bool{}

	for _, name := range a.Names() {
		rest, ok := strings.CutPrefix(name, "lib/modules/")
		if !ok || !strings.Contains(rest, "/") {
			continue
		}

		release, file, _ := strings.Cut(rest, "/")
		if !strings.Contains(path.Base(file), ".ko") && file != "modules.builtin" {
			continue
		}

		data, err := a.ReadFile(name)
		if err != nil {
			continue // a directory named *.ko, or a symlink
		}

		dst := filepath.Join(tmp, release, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}

		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}

		releases[release] = true
	}

	for release := range releases {
		m, err := initramfs.OpenModules(filepath.Join(tmp, release))
		if err != nil {
			continue // only modules.builtin: nothing to list
		}

		dep, err := m.DepFile(m.Files())
		if err != nil {
			return fmt.Errorf("customize: %w", err)
		}

		a.Bytes(path.Join("lib/modules", release, "modules.dep"), dep, 0o644)
		fmt.Fprintf(log, "customize: lib/modules/%s/modules.dep lists %d modules\n", release, len(m.Files()))
	}

	return nil
}
