package initramfs

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Runtime is what a node needs beside the talosbox binary to run
// containers: runc (static, with seccomp), the CNI plugins, and the
// netfilter userspace the portmap plugin runs. containerd and its shim
// are applets of the binary itself.
type Runtime struct {
	// Runc goes to /bin/runc.
	Runc string
	// CNIBinDir's files go to /opt/cni/bin.
	CNIBinDir string
	// Root is a tree merged into the root filesystem as it is, symlinks
	// included: Debian's iptables and nft with their loader and
	// libraries (make images writes it). portmap, the CNI plugin behind
	// hostPort, runs iptables on the node itself.
	Root string
}

// Paths inside a node's root filesystem (the initramfs, the Docker node
// image), as on Talos.
const (
	RuncPath  = "/bin/runc"
	CNIBinDir = "/opt/cni/bin"
)

// ErrNoRuntime says `make images` has not built the runtime yet.
var ErrNoRuntime = errors.New("no container runtime built")

// RuntimeBeside finds the runtime that `make images` leaves next to the
// binary's directory (_out/images/runtime/runc, _out/images/cni/bin for
// _out/talosbox), where `talosctl cluster create` looks for it too.
func RuntimeBeside(binary string) (Runtime, error) {
	return RuntimeIn(filepath.Join(filepath.Dir(binary), "images"))
}

// RuntimeIn finds the runtime in the output directory of `make images`.
func RuntimeIn(out string) (Runtime, error) {
	rt := Runtime{Runc: filepath.Join(out, "runtime", "runc"), CNIBinDir: filepath.Join(out, "cni", "bin"), Root: filepath.Join(out, "runtime", "root")}

	for _, p := range []string{rt.Runc, rt.CNIBinDir, rt.Root} {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return Runtime{}, fmt.Errorf("%w: %s is missing (run make images)", ErrNoRuntime, p)
		} else if err != nil {
			return Runtime{}, err
		}
	}

	return rt, nil
}

// Files lists the runtime's members as archive path → source file,
// checking that each is a static executable: a node has no loader.
func (rt Runtime) Files() (map[string]string, error) {
	files := map[string]string{}

	if rt.Runc != "" {
		files[RuncPath[1:]] = rt.Runc
	}

	if rt.CNIBinDir != "" {
		ents, err := os.ReadDir(rt.CNIBinDir)
		if err != nil {
			return nil, fmt.Errorf("CNI plugins: %w", err)
		}

		for _, e := range ents {
			if e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 {
				files[CNIBinDir[1:]+"/"+e.Name()] = filepath.Join(rt.CNIBinDir, e.Name())
			}
		}
	}

	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := CheckStatic(files[name]); err != nil {
			return nil, fmt.Errorf("runtime /%s: %w", name, err)
		}
	}

	return files, nil
}

// Tree lists Root's members by archive path (relative, as Files names
// them): regular files with their source, and symlinks with their
// targets, which are kept (iptables is a link to xtables-nft-multi, which
// dispatches on its name).
func (rt Runtime) Tree() (files, links map[string]string, err error) {
	files, links = map[string]string{}, map[string]string{}
	if rt.Root == "" {
		return files, links, nil
	}

	err = filepath.WalkDir(rt.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		rel, err := filepath.Rel(rt.Root, p)
		if err != nil || rel == "." {
			return err
		}

		rel = filepath.ToSlash(rel)

		switch {
		case d.IsDir():
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}

			links[rel] = target
		case d.Type().IsRegular():
			files[rel] = p
		default:
			return fmt.Errorf("%s: not a file, directory or symlink", p)
		}

		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("runtime root: %w", err)
	}

	return files, links, nil
}
