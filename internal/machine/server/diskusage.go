package server

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/talosbox/talosbox/internal/api/machine"
)

// DiskUsage is `talosctl usage`: du over the node's paths. Sizes are
// apparent sizes (a directory's own entry plus everything under it), as
// Talos reports them; a record per directory, per file with All, each
// sent once its subtree is summed.
func (m *machineServer) DiskUsage(req *machine.DiskUsageRequest, stream machine.MachineService_DiskUsageServer) error {
	paths := req.GetPaths()
	if len(paths) == 0 {
		paths = []string{"/"}
	}

	for _, p := range paths {
		root := filepath.Clean("/" + p)

		err := walkUsage(stream.Context(), root, req, stream.Send)
		if err != nil {
			return err
		}
	}

	return nil
}

// walkUsage sums root's subtree, sending the records req asks for. An
// entry that cannot be read is reported in its record's Error and the
// walk goes on, as du does.
func walkUsage(ctx context.Context, root string, req *machine.DiskUsageRequest, send func(*machine.DiskUsageInfo) error) error {
	fi, err := os.Lstat(root)
	if err != nil {
		return send(&machine.DiskUsageInfo{Name: root, RelativeName: root, Error: err.Error()})
	}

	w := usageWalker{ctx: ctx, root: root, req: req, send: send}
	_, err = w.walk(root, fi, 0)

	return err
}

type usageWalker struct {
	ctx  context.Context
	root string
	req  *machine.DiskUsageRequest
	send func(*machine.DiskUsageInfo) error
}

func (w *usageWalker) walk(path string, fi fs.FileInfo, depth int32) (int64, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}

	size := max(fi.Size(), 0)
	// /proc/kcore claims the whole address space.
	if path == "/proc/kcore" {
		size = 0
	}

	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			if err := w.send(w.record(path, 0, err)); err != nil {
				return 0, err
			}
		}

		for _, e := range entries {
			child := filepath.Join(path, e.Name())

			cfi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone while we looked (a process in /proc)
			}

			if err != nil {
				if err := w.send(w.record(child, 0, err)); err != nil {
					return 0, err
				}

				continue
			}

			n, err := w.walk(child, cfi, depth+1)
			if err != nil {
				return 0, err
			}

			size += n
		}
	}

	if w.report(fi.IsDir(), depth, size) {
		if err := w.send(w.record(path, size, nil)); err != nil {
			return 0, err
		}
	}

	return size, nil
}

// report applies the request's filters: depth, files only with All, and
// the threshold (a minimum when positive, a maximum when negative).
func (w *usageWalker) report(dir bool, depth int32, size int64) bool {
	r := w.req

	switch {
	case r.GetRecursionDepth() > 0 && depth >= r.GetRecursionDepth():
		return false
	case !dir && !r.GetAll():
		return false
	case r.GetThreshold() > 0 && size < r.GetThreshold():
		return false
	case r.GetThreshold() < 0 && size > -r.GetThreshold():
		return false
	}

	return true
}

func (w *usageWalker) record(path string, size int64, err error) *machine.DiskUsageInfo {
	rel, relErr := filepath.Rel(w.root, path)
	if relErr != nil || strings.HasPrefix(rel, "..") {
		rel = path
	}

	info := &machine.DiskUsageInfo{Name: path, RelativeName: rel, Size: size}
	if err != nil {
		info.Error = err.Error()
	}

	return info
}
