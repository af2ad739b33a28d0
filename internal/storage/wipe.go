package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/render/layout"
)

// ephemeral is what EPHEMERAL is on this node, and what a wipe of it
// must leave: on a Docker node (one that owns its root) it is /var, as on
// metal, where containerd, the kubelet, the pods' logs and etcd keep
// their data, but for STATE and the node's /etc, which the node's volume
// keeps below /var/lib/talosbox. A machined sharing a host's filesystem
// keeps it all under its own EphemeralDir.
func (v *Volumes) ephemeral() (dir string, keep []string) {
	p := v.opts.Platform
	if !p.OwnRoot || p.IsMetal() {
		return p.EphemeralDir, nil
	}

	return layout.EphemeralDir(false), []string{v.opts.Platform.StateDir, filepath.Join(filepath.Dir(p.StateDir), "etc")}
}

// WipeDirLabel wipes a system label kept as a directory (the container
// platform): what is mounted below it goes first (the pods' volumes, a
// container's rootfs), then what it holds, and the log says what went.
func (v *Volumes) WipeDirLabel(label string, w io.Writer) error {
	dir, keep := v.opts.Platform.StateDir, []string(nil)
	if label == "EPHEMERAL" {
		dir, keep = v.ephemeral()
	}

	if err := unmountBelow(dir, keep); err != nil {
		return fmt.Errorf("wipe %s: %w", label, err)
	}

	removed, err := WipeExcept(dir, keep...)
	if err != nil {
		return fmt.Errorf("wipe %s: %w", label, err)
	}

	what := "nothing was there"
	if len(removed) > 0 {
		what = "removed " + strings.Join(removed, ", ")
	}

	fmt.Fprintf(w, "[talos] wiped %s (%s: %s)\n", label, dir, what)

	return nil
}

// unmountBelow unmounts what is mounted strictly below dir, but for the
// mounts that hold a kept path (a Docker node's state volume).
func unmountBelow(dir string, keep []string) error {
	mounts, err := disk.Mounts()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}

	for _, mp := range disk.Beneath(mounts, dir) {
		if slices.ContainsFunc(keep, func(k string) bool { return k == mp || strings.HasPrefix(k, mp+"/") || strings.HasPrefix(mp, k+"/") }) {
			continue
		}

		err := unix.Unmount(mp, 0)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(mp, unix.MNT_DETACH)
		}

		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) { // gone with its parent
			return fmt.Errorf("unmount %s: %w", mp, err)
		}
	}

	return nil
}

// WipeExcept empties dir but for the paths in keep and the directories on
// the way to them. The directories right below dir stay, emptied, with
// their modes (a Docker node's /var/tmp is 1777). It returns what it
// removed, relative to dir, in the order removed.
func WipeExcept(dir string, keep ...string) ([]string, error) {
	dir = filepath.Clean(dir)

	var removed []string

	var walk func(d string, top bool) error

	walk = func(d string, top bool) error {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}

		if err != nil {
			return err
		}

		for _, e := range entries {
			p := filepath.Join(d, e.Name())

			switch {
			case slices.Contains(keep, p):
				continue
			case slices.ContainsFunc(keep, func(k string) bool { return strings.HasPrefix(k, p+"/") }),
				top && e.IsDir():
				if err := walk(p, false); err != nil {
					return err
				}

				continue
			}

			if err := os.RemoveAll(p); err != nil {
				return err
			}

			rel, _ := filepath.Rel(dir, p)
			removed = append(removed, rel)
		}

		return nil
	}

	return removed, walk(dir, true)
}

// Wipe removes everything in dir but keeps dir itself (it may be a mount
// point or a volume).
func Wipe(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}

	if err != nil {
		return fmt.Errorf("wipe %s: %w", dir, err)
	}

	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("wipe %s: %w", dir, err)
		}
	}

	return nil
}
