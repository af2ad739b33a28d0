package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// imageNamespace is image --namespace: which namespace of the node's CRI
// containerd the list and pull subcommands work in.
type imageNamespace struct{ name string }

func (n *imageNamespace) api() (common.ContainerdNamespace, error) {
	switch n.name {
	case "cri":
		return common.ContainerdNamespace_NS_CRI, nil
	case "system":
		return common.ContainerdNamespace_NS_SYSTEM, nil
	default:
		return 0, fmt.Errorf("unsupported namespace %q: use cri or system", n.name)
	}
}

// addImageNamespaceFlag puts --namespace on the image command, for all
// its subcommands, as Talos does.
func addImageNamespaceFlag(cmd *cobra.Command) *imageNamespace {
	ns := &imageNamespace{}
	cmd.PersistentFlags().StringVar(&ns.name, "namespace", "cri", `namespace to use: "system" (etcd and kubelet images), "cri" for all Kubernetes workloads`)

	return ns
}

func newImageListCommand(g *global.Args, ns *imageNamespace) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"l", "ls"},
		Short:   "List images in the machine's container runtime",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			apiNS, err := ns.api()
			if err != nil {
				return err
			}

			req := &machine.ImageListRequest{Namespace: apiNS}

			return g.WithSession(false, func(s *global.Session) error {
				return listImages(cmd, s, req)
			})
		},
	}
}

func listImages(cmd *cobra.Command, s *global.Session, req *machine.ImageListRequest) error {
	results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) ([]*machine.ImageListResponse, error) {
		stream, err := c.Machine.ImageList(ctx, req)
		if err != nil {
			return nil, err
		}

		var imgs []*machine.ImageListResponse

		for {
			img, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return imgs, nil
			}

			if err != nil {
				return imgs, err
			}

			if err := client.MetadataError(img.GetMetadata()); err != nil {
				return imgs, err
			}

			imgs = append(imgs, img)
		}
	})

	w := global.NewTable(cmd.OutOrStdout())
	fmt.Fprintln(w, "NODE\tIMAGE\tDIGEST\tSIZE\tCREATED")

	for _, r := range results {
		for _, img := range r.Value {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n",
				s.NodeName(r.Node, img.GetMetadata()),
				img.GetName(),
				img.GetDigest(),
				humanize.Bytes(uint64(max(img.GetSize(), 0))),
				img.GetCreatedAt().AsTime().Format(time.RFC3339),
			)
		}
	}

	if err := w.Flush(); err != nil {
		return err
	}

	return global.ReportErrors(cmd, results)
}

func newImagePullCommand(g *global.Args, ns *imageNamespace) *cobra.Command {
	return &cobra.Command{
		Use:     "pull <image>",
		Aliases: []string{"p"},
		Short:   "Pull an image into the machine's container runtime",
		Long: `Pulls an image on each node into its CRI containerd, through the registry
mirrors of the node's machine config (machine.registries), as the CRI would.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			apiNS, err := ns.api()
			if err != nil {
				return err
			}

			req := &machine.ImagePullRequest{Namespace: apiNS, Reference: args[0]}

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.ImagePull, error) {
					resp, err := c.Machine.ImagePull(ctx, req)
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				for _, r := range results {
					if r.Err == nil {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: pulled image %s\n", s.NodeName(r.Node, r.Value.GetMetadata()), args[0])
					}
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}
}

func newImageImportCommand(g *global.Args, ns *imageNamespace) *cobra.Command {
	return &cobra.Command{
		Use:   "import <archive|oci-layout-dir|docker-image|->",
		Short: "Import an image into the machine's container runtime from this host, with no registry",
		Long: `Streams an image to each node's CRI containerd over the node API
(Talos's ImageService.Import), so pods can run it at once with no registry and
nothing downloaded. The image is any of:

  a file           a docker save archive, or an OCI archive (docker buildx --output type=oci)
  a directory      an OCI image layout (index.json and blobs/)
  -                either archive on stdin
  anything else    an image of the local Docker Engine, as docker save gives it

Images are named as the archive names them, as Kubernetes resolves names:
myapp:dev is docker.io/library/myapp:dev, so 'kubectl run --image=myapp:dev'
finds it. An OCI layout must name its image by a full reference. Only the
node's platform is imported. 'talosctl cluster load' does this for every node
of a local cluster.`,
		Example: `  talosctl -n 10.5.0.2,10.5.0.3 image import myapp:dev
  docker save myapp:dev | talosctl -n 10.5.0.2 image import -
  talosctl -n 10.5.0.3 image import ./myapp-oci/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			apiNS, err := ns.api()
			if err != nil {
				return err
			}

			a, err := global.OpenImageArchive(cmd.Context(), args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			defer a.Close() //nolint:errcheck // a temporary file

			return g.WithSession(false, func(s *global.Session) error {
				return global.ImportImages(cmd, s, a, apiNS)
			})
		},
	}
}
