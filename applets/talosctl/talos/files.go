package talos

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

func NewListCommand(g *global.Args) *cobra.Command {
	var (
		long, recurse bool
		depth         int32
	)

	cmd := &cobra.Command{
		Use:     "list [path]",
		Aliases: []string{"ls"},
		Short:   "Retrieve a directory listing",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "/"
			if len(args) == 1 {
				root = args[0]
			}

			req := &machine.ListRequest{Root: root}
			if recurse || cmd.Flags().Changed("depth") {
				req.Recurse = true
				if cmd.Flags().Changed("depth") {
					req.RecursionDepth = depth
				}
			}

			return g.WithSession(false, func(s *global.Session) error {
				return listFiles(cmd, s, req, long)
			})
		},
	}

	cmd.Flags().BoolVarP(&long, "long", "l", false, "display additional file details")
	cmd.Flags().BoolVarP(&recurse, "recurse", "r", false, "recurse into subdirectories")
	cmd.Flags().Int32VarP(&depth, "depth", "d", 1, "maximum recursion depth")

	return cmd
}

func listFiles(cmd *cobra.Command, s *global.Session, req *machine.ListRequest, long bool) error {
	results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) ([]*machine.FileInfo, error) {
		stream, err := c.Machine.List(ctx, req)
		if err != nil {
			return nil, err
		}

		var infos []*machine.FileInfo

		for {
			fi, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return infos, nil
			}

			if err != nil {
				return infos, err
			}

			if err := client.MetadataError(fi.GetMetadata()); err != nil {
				return infos, err
			}

			infos = append(infos, fi)
		}
	})

	w := global.NewTable(cmd.OutOrStdout())

	if long {
		fmt.Fprintln(w, "NODE\tMODE\tUID\tGID\tSIZE(B)\tLASTMOD\tNAME")
	} else {
		fmt.Fprintln(w, "NODE\tNAME")
	}

	for _, r := range results {
		for _, fi := range r.Value {
			node := s.NodeName(r.Node, fi.GetMetadata())

			if fi.GetError() != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: error reading file %s: %s\n", node, fi.GetName(), fi.GetError())
				continue
			}

			name := fi.GetRelativeName()
			if name == "" {
				name = fi.GetName()
			}

			if fi.GetLink() != "" {
				name += " -> " + fi.GetLink()
			}

			if !long {
				fmt.Fprintf(w, "%s\t%s\n", node, name)
				continue
			}

			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", node, fs.FileMode(fi.GetMode()).String(), fi.GetUid(), fi.GetGid(),
				fi.GetSize(), time.Unix(fi.GetModified(), 0).UTC().Format("Jan 2 2006 15:04:05"), name)
		}
	}

	if err := w.Flush(); err != nil {
		return err
	}

	return global.ReportErrors(cmd, results)
}

func NewReadCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "read <path>",
		Aliases: []string{"cat"},
		Short:   "Read a file on the machine",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
					stream, err := c.Machine.Read(ctx, &machine.ReadRequest{Path: args[0]})
					if err != nil {
						return struct{}{}, err
					}

					return struct{}{}, client.CopyStream(stream, cmd.OutOrStdout())
				})

				return global.ReportErrors(cmd, results)
			})
		},
	}
}

func NewCopyCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "copy <src-path> -|<local-path>",
		Aliases: []string{"cp"},
		Short:   "Copy data out from the node",
		Long: `Creates a .tar archive on the node starting at <src-path> and streams it back.
With '-' the archive is written to stdout; otherwise it is extracted into
<local-path>, which is created if needed.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
					stream, err := c.Machine.Copy(ctx, &machine.CopyRequest{RootPath: args[0]})
					if err != nil {
						return struct{}{}, err
					}

					if args[1] == "-" {
						return struct{}{}, client.CopyStream(stream, cmd.OutOrStdout())
					}

					pr, pw := io.Pipe()

					go func() { pw.CloseWithError(client.CopyStream(stream, pw)) }()

					err = extractTar(pr, args[1])
					pr.CloseWithError(err) // unblocks the writer if extraction stopped early

					return struct{}{}, err
				})

				return global.ReportErrors(cmd, results)
			})
		},
	}
}

// extractTar unpacks an archive under dir. os.Root keeps every entry, and
// every symlink an entry might pass through, inside dir.
func extractTar(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("extract: %w", err)
	}

	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer root.Close()

	tr := tar.NewReader(r)

	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}

		if err != nil {
			return fmt.Errorf("extract: %w", err)
		}

		name := path.Clean(strings.TrimPrefix(hdr.Name, "/"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			continue
		}

		if err := extractEntry(root, tr, hdr, name); err != nil {
			return fmt.Errorf("extract %s: %w", name, err)
		}
	}
}

func extractEntry(root *os.Root, r io.Reader, hdr *tar.Header, name string) error {
	perm := fs.FileMode(hdr.Mode).Perm()

	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}

	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, 0o755); err != nil {
			return err
		}

		return root.Chmod(name, perm|0o700)
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
		if err != nil {
			return err
		}

		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}

		return f.Close()
	case tar.TypeSymlink:
		root.Remove(name) //nolint:errcheck // replaced if present

		return root.Symlink(hdr.Linkname, name)
	default:
		return nil // devices, fifos: not meaningful on the workstation
	}
}
