package validator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
)

// lookup finds p in a read-only view's mounts without mounting them: the
// overlayfs snapshotter's view is a bind mount of one layer's directory or
// an overlay of several (lowerdir, top first), and the file is read where
// overlayfs would find it, whiteouts and opaque directories honoured.
// Mounting would need a mount namespace of its own and leave a mount
// behind on a crash; reading the layers needs neither.
func lookup(mounts []mount.Mount, p string) (string, error) {
	if len(mounts) != 1 {
		return "", fmt.Errorf("a view of %d mounts: only the overlayfs snapshotter's are read", len(mounts))
	}

	var layers []string

	switch m := mounts[0]; m.Type {
	case "bind", "rbind":
		layers = []string{m.Source}
	case "overlay":
		for _, o := range m.Options {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				layers = append([]string{v}, layers...)
			}

			if v, ok := strings.CutPrefix(o, "lowerdir="); ok {
				layers = append(layers, strings.Split(v, ":")...)
			}
		}
	default:
		return "", fmt.Errorf("a view mounted as %s: only the overlayfs snapshotter's are read", m.Type)
	}

	rel := strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")

	for _, layer := range layers {
		found, hides, err := inLayer(layer, rel)
		if err != nil || found != "" {
			return found, err
		}

		if hides {
			break
		}
	}

	return "", ErrNoValidator
}

// inLayer looks for rel in one layer: the file when this layer has it,
// else whether the layer hides what the layers below have there (a
// whiteout, an opaque directory, a file where a directory would be).
func inLayer(layer string, rel []string) (found string, hides bool, err error) {
	dir := layer

	for i, el := range rel {
		at := filepath.Join(dir, el)

		st, err := os.Lstat(at)
		if errors.Is(err, fs.ErrNotExist) {
			return "", hides, nil
		}

		if err != nil {
			return "", false, fmt.Errorf("read the image's snapshot: %w", err)
		}

		if whiteout(st) {
			return "", true, nil
		}

		if i == len(rel)-1 {
			if !st.Mode().IsRegular() {
				return "", false, fmt.Errorf("%s is not a regular file in the image", "/"+strings.Join(rel, "/"))
			}

			return at, false, nil
		}

		// A symbolic link or a file where the path needs a directory:
		// what is below is not reached through it.
		if !st.IsDir() {
			return "", true, nil
		}

		// The rest of the path can only be in this layer.
		hides = hides || opaque(at)
		dir = at
	}

	return "", hides, nil
}

// whiteout: overlayfs marks a removed entry with a 0/0 character device.
func whiteout(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)

	return ok && st.Mode()&fs.ModeCharDevice != 0 && sys.Rdev == 0
}

// opaque: a directory that replaces, not merges with, the one below.
// The snapshotter writes the trusted attribute, or the user one when it
// mounts with userxattr.
func opaque(dir string) bool {
	buf := make([]byte, 1)

	for _, attr := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		if n, err := unix.Lgetxattr(dir, attr, buf); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}

	return false
}
