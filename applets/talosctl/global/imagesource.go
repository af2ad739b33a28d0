package global

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/provision"
)

// ImageArchive is an image archive on disk, ready to be streamed to as
// many nodes as need it.
type ImageArchive struct {
	// Path is the archive: the user's own file, or a temporary one.
	Path string
	// From says where it came from, for messages.
	From string
	// Size is the archive's size in bytes.
	Size int64

	temp bool
}

// Close removes a temporary archive.
func (a *ImageArchive) Close() error {
	if a.temp {
		return os.Remove(a.Path)
	}

	return nil
}

// OpenImageArchive finds the image src names, as kind's `load` and k3d's
// `image import` take them:
//   - "-": a docker save or OCI archive on stdin;
//   - a file: a docker save or OCI archive (`docker save -o`, `docker
//     buildx --output type=oci`);
//   - a directory holding index.json: an OCI image layout, tarred here;
//   - anything else: an image of the local Docker Engine, saved from it.
//
// Everything but the user's own file is spooled to a temporary file,
// since each node reads the archive from the start.
func OpenImageArchive(ctx context.Context, src string, stdin io.Reader) (*ImageArchive, error) {
	if src == "-" {
		return spool("stdin", func(w io.Writer) error {
			_, err := io.Copy(w, stdin)
			return err
		})
	}

	st, err := os.Stat(src)

	switch {
	case err == nil && st.Mode().IsRegular():
		return &ImageArchive{Path: src, From: src, Size: st.Size()}, nil
	case err == nil && st.IsDir():
		if _, err := os.Stat(filepath.Join(src, "index.json")); err != nil {
			return nil, fmt.Errorf("%s: a directory, but not an OCI image layout: no index.json", src)
		}

		return spool(src+" (OCI layout)", func(w io.Writer) error {
			tw := tar.NewWriter(w)
			if err := tw.AddFS(os.DirFS(src)); err != nil {
				return err
			}

			return tw.Close()
		})
	case err == nil:
		return nil, fmt.Errorf("%s: not a file or a directory", src)
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	case looksLikePath(src):
		return nil, fmt.Errorf("%s: no such file or directory", src)
	}

	d, err := provision.New(ctx, provision.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s is not a file, so it names an image of the local Docker Engine: %w", src, err)
	}
	defer d.Close() //nolint:errcheck // nothing to do about it

	return spool(src+" (Docker Engine)", func(w io.Writer) error {
		return d.SaveImage(ctx, src, w)
	})
}

// looksLikePath is a name no image reference has: a path a user meant.
func looksLikePath(src string) bool {
	return strings.HasPrefix(src, "/") || strings.HasPrefix(src, "./") || strings.HasPrefix(src, "../") ||
		strings.HasSuffix(src, ".tar") || strings.HasSuffix(src, ".tar.gz") || strings.HasSuffix(src, ".tgz")
}

// spool writes an archive to a temporary file.
func spool(from string, write func(io.Writer) error) (*ImageArchive, error) {
	f, err := os.CreateTemp("", "talosctl-image-*.tar")
	if err != nil {
		return nil, err
	}

	a := &ImageArchive{Path: f.Name(), From: from, temp: true}

	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}

	if err != nil {
		_ = a.Close()

		return nil, fmt.Errorf("%s: %w", from, err)
	}

	st, err := os.Stat(a.Path)
	if err != nil {
		_ = a.Close()

		return nil, err
	}

	a.Size = st.Size()

	return a, nil
}

// ImportImages streams the archive to every node of the session in
// parallel and prints a line per node that took it.
func ImportImages(cmd *cobra.Command, s *Session, a *ImageArchive, ns common.ContainerdNamespace) error {
	start := time.Now()

	results := FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (string, error) {
		f, err := os.Open(a.Path)
		if err != nil {
			return "", err
		}
		defer f.Close()

		return c.ImportImage(ctx, f, ns, nil)
	})

	for _, r := range results {
		if r.Err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: imported %s (%s from %s) in %s\n", s.NodeName(r.Node, nil), r.Value,
				humanize.IBytes(uint64(a.Size)), a.From, time.Since(start).Round(time.Millisecond))
		}
	}

	return ReportErrors(cmd, results)
}
