package mgmt

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/provision"
	"github.com/talosbox/talosbox/internal/provision/vm"
)

func newClusterLoadCommand(g *global.Args) *cobra.Command {
	var t clusterTarget

	cmd := &cobra.Command{
		Use:   "load <image|archive|oci-layout-dir|->...",
		Short: "Loads images from this host into every node of a local cluster, as kind load does",
		Long: `Puts images into the CRI containerd of every node of a local cluster, so pods
run them at once with no registry and nothing downloaded: kind's
'load docker-image' and 'load image-archive', and k3d's 'image import', in one.
Each argument is an image of the local Docker Engine (saved from it), a docker
save or OCI archive, an OCI image layout directory, or - for an archive on
stdin. See 'talosctl image import' for how images are named.

The nodes are reached through the talosconfig context named after the
cluster (what 'cluster create' merged), or --context; --nodes narrows them.`,
		Example: `  docker build -t myapp:dev . && talosctl cluster load myapp:dev
  kubectl run myapp --image=myapp:dev
  talosctl cluster load --name dev ./myapp.tar ./other-oci-layout/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if stdins := len(args) - len(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-" })); stdins > 1 {
				return errors.New("stdin (-) can be read once")
			}

			nodes, err := t.nodeIPs(cmd.Context())
			if err != nil {
				return err
			}

			sg := *g
			if sg.Context == "" {
				sg.Context = t.name
			}

			if len(sg.Nodes) == 0 {
				sg.Nodes = nodes
			}

			var archives []*global.ImageArchive

			defer func() {
				for _, a := range archives {
					_ = a.Close()
				}
			}()

			for _, src := range args {

				a, err := global.OpenImageArchive(cmd.Context(), src, cmd.InOrStdin())
				if err != nil {
					return err
				}

				archives = append(archives, a)
			}

			return sg.WithSession(false, func(s *global.Session) error {
				for _, a := range archives {
					if err := global.ImportImages(cmd, s, a, common.ContainerdNamespace_NS_CRI); err != nil {
						return err
					}
				}

				return nil
			})
		},
	}

	t.register(cmd)

	return cmd
}

// nodeIPs are the addresses of the cluster's nodes, from its provisioner.
func (t *clusterTarget) nodeIPs(ctx context.Context) ([]string, error) {
	o, isVM, err := t.resolve()
	if err != nil {
		return nil, err
	}

	var ips []string

	if isVM {
		st, err := vm.Load(o, t.name)
		if err != nil {
			return nil, err
		}

		for _, n := range st.Nodes {
			ips = append(ips, n.IP.String())
		}

		return ips, nil
	}

	d, err := provision.New(ctx, provision.Options{})
	if err != nil {
		return nil, err
	}
	defer d.Close() //nolint:errcheck // nothing to do about it

	c, err := d.Show(ctx, t.name)
	if errors.Is(err, provision.ErrNotFound) {
		return nil, fmt.Errorf("cluster %q not found", t.name)
	}

	if err != nil {
		return nil, err
	}

	for _, n := range c.Nodes {
		ips = append(ips, n.IP.String())
	}

	return ips, nil
}
