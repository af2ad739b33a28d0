package server

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
)

// cleanRoot insists on an absolute path: the API has no working directory.
func cleanRoot(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", status.Errorf(codes.InvalidArgument, "path %q must be absolute", p)
	}

	return filepath.Clean(p), nil
}

func fileInfo(path, rel string, fi fs.FileInfo) *machine.FileInfo {
	out := &machine.FileInfo{
		Name:         path,
		RelativeName: rel,
		Size:         fi.Size(),
		Mode:         uint32(fi.Mode()),
		Modified:     fi.ModTime().Unix(),
		IsDir:        fi.IsDir(),
	}

	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.Uid, out.Gid = st.Uid, st.Gid
	}

	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err := os.Readlink(path); err == nil {
			out.Link = target
		}
	}

	return out
}

// List walks a directory as `talosctl ls` does: the root first, then its
// entries; with recurse, recursion_depth levels (0: unlimited), else one.
// Symlinks are reported, never followed. Errors on single entries are
// reported in the entry, not as the call's failure.
func (m *machineServer) List(req *machine.ListRequest, srv grpc.ServerStreamingServer[machine.FileInfo]) error {
	root, err := cleanRoot(req.GetRoot())
	if err != nil {
		return err
	}

	maxDepth := 1
	if req.GetRecurse() {
		maxDepth = int(req.GetRecursionDepth())
	}

	if _, err := os.Lstat(root); err != nil {
		return status.Errorf(codes.NotFound, "list: %v", err)
	}

	return filepath.WalkDir(root, func(path string, d fs.DirEntry, werr error) error {
		if err := srv.Context().Err(); err != nil {
			return err
		}

		rel, _ := filepath.Rel(root, path)

		if werr != nil {
			return srv.Send(&machine.FileInfo{Name: path, RelativeName: rel, Error: werr.Error()})
		}

		fi, err := d.Info()
		if err != nil {
			return srv.Send(&machine.FileInfo{Name: path, RelativeName: rel, Error: err.Error()})
		}

		if err := srv.Send(fileInfo(path, rel, fi)); err != nil {
			return err
		}

		if d.IsDir() && path != root && maxDepth > 0 && depth(rel) >= maxDepth {
			return filepath.SkipDir
		}

		return nil
	})
}

func depth(rel string) int {
	if rel == "." {
		return 0
	}

	return strings.Count(rel, string(filepath.Separator)) + 1
}

// openRegular opens path only if it is a regular file. The check is made
// on the open descriptor (no race with a rename), and the open does not
// block on a FIFO.
func openRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}

	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}

	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file", path)
	}

	// Back to blocking: a regular file is not pollable anyway.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}

	return os.NewFile(uintptr(fd), path), nil
}

// Read streams one regular file (admin only: file contents may be secrets).
func (m *machineServer) Read(req *machine.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	path, err := cleanRoot(req.GetPath())
	if err != nil {
		return err
	}

	path = m.nodePath(path)

	f, err := openRegular(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return status.Errorf(codes.NotFound, "read: %v", err)
		}

		return status.Errorf(codes.InvalidArgument, "read: %v", err)
	}
	defer f.Close()

	return sendChunks(srv, f)
}

// nodePath maps Talos's /system/state, where the docs read the config
// from (`talosctl read /system/state/config.yaml`), to the node's STATE
// directory in container mode, which lives on the state volume. On metal
// STATE is mounted at /system/state itself.
func (m *machineServer) nodePath(p string) string {
	pl := m.node.Platform()
	if pl.IsMetal() || pl.StateDir == "" {
		return p
	}

	const state = "/system/state"

	if p == state || strings.HasPrefix(p, state+"/") {
		return filepath.Join(pl.StateDir, strings.TrimPrefix(p, state))
	}

	return p
}

// dataWriter turns a byte stream into common.Data messages.
type dataWriter struct {
	srv grpc.ServerStreamingServer[common.Data]
}

func (w dataWriter) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += chunkSize {
		end := min(off+chunkSize, len(p))
		if err := w.srv.Send(&common.Data{Bytes: append([]byte(nil), p[off:end]...)}); err != nil {
			return off, err
		}
	}

	return len(p), nil
}

// Copy streams a tar archive of a file or directory tree (admin only).
// Regular files, directories and symlinks are archived; devices, sockets
// and FIFOs are skipped. Names are relative to the root's parent, as
// `tar -C dir(root) -c base(root)` makes them.
func (m *machineServer) Copy(req *machine.CopyRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	root, err := cleanRoot(req.GetRootPath())
	if err == nil {
		root = m.nodePath(root)
	}
	if err != nil {
		return err
	}

	if _, err := os.Lstat(root); err != nil {
		return status.Errorf(codes.NotFound, "copy: %v", err)
	}

	buf := &chunkBuffer{w: dataWriter{srv: srv}}
	tw := tar.NewWriter(buf)
	base := filepath.Dir(root)

	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, werr error) error {
		if err := srv.Context().Err(); err != nil {
			return err
		}

		if werr != nil {
			return nil //nolint:nilerr // unreadable entries are skipped, as tar warns and goes on
		}

		fi, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // vanished while walking
		}

		return addToTar(tw, base, path, fi)
	})
	if err != nil {
		return status.Errorf(codes.Internal, "copy: %v", err)
	}

	if err := tw.Close(); err != nil {
		return status.Errorf(codes.Internal, "copy: %v", err)
	}

	return buf.Flush()
}

func addToTar(tw *tar.Writer, base, path string, fi fs.FileInfo) error {
	link := ""

	switch {
	case fi.Mode().IsRegular(), fi.IsDir():
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return nil //nolint:nilerr // vanished
		}

		link = target
	default:
		return nil
	}

	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}

	rel, _ := filepath.Rel(base, path)
	hdr.Name = filepath.ToSlash(rel)

	if fi.IsDir() {
		hdr.Name += "/"
	}

	if !fi.Mode().IsRegular() {
		return tw.WriteHeader(hdr)
	}

	f, err := openRegular(path)
	if err != nil {
		return nil //nolint:nilerr // unreadable or replaced: skipped
	}
	defer f.Close()

	// A small file is read whole first: procfs, sysfs and cgroupfs files
	// report a size (0, 4096) that is not their content's.
	if hdr.Size <= smallFile {
		data, err := io.ReadAll(io.LimitReader(f, smallFile+1))
		if err != nil || len(data) > smallFile {
			return nil //nolint:nilerr // unreadable, or not small after all: skipped
		}

		hdr.Size = int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}

		_, err = tw.Write(data)

		return err
	}

	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}

	// The header promised hdr.Size bytes: a file that shrank meanwhile is
	// padded, one that grew is cut.
	n, err := io.Copy(tw, io.LimitReader(f, hdr.Size))
	if err != nil {
		return err
	}

	if n < hdr.Size {
		_, err = io.CopyN(tw, zeroReader{}, hdr.Size-n)
	}

	return err
}

// smallFile is the size up to which Copy reads a file before writing its
// header (pseudo files are all smaller).
const smallFile = 64 << 10

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// chunkBuffer gathers the tar writer's many small writes into chunks.
type chunkBuffer struct {
	w   io.Writer
	buf []byte
}

func (b *chunkBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)

	if len(b.buf) >= chunkSize {
		if err := b.Flush(); err != nil {
			return 0, err
		}
	}

	return len(p), nil
}

func (b *chunkBuffer) Flush() error {
	if len(b.buf) == 0 {
		return nil
	}

	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]

	return err
}
