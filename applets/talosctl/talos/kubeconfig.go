package talos

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

func NewKubeconfigCommand(g *global.Args) *cobra.Command {
	var force, merge bool

	var contextName string

	cmd := &cobra.Command{
		Use:   "kubeconfig [local-path]",
		Short: "Download the admin kubeconfig from the node",
		Long: `Download the admin kubeconfig from a control plane node: a fresh client
certificate (CN admin, group system:masters) signed by the cluster CA, for
the cluster's control-plane endpoint.

With no path it is merged into the default kubeconfig ($KUBECONFIG, else
~/.kube/config) as the context admin@<cluster>, which becomes the current
one. A path that is a directory gets a file named kubeconfig in it. With
--merge=false, or when the target does not exist yet, the file is written
whole (an existing file needs --force). When merging, a cluster, user or
context of the same name is replaced with --force and otherwise kept, the new
one getting a numbered name.`,
		Example: `  talosctl -n 10.5.0.2 kubeconfig
  talosctl -n 10.5.0.2 kubeconfig . --merge=false
  talosctl -n 10.5.0.2 kubeconfig ~/lab.kubeconfig --force`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, merging, err := global.KubeconfigTarget(args, merge)
			if err != nil {
				return err
			}

			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) ([]byte, error) {
					return c.Kubeconfig(ctx)
				})

				if err := global.ReportErrors(cmd, results); err != nil {
					return err
				}

				data := results[0].Value
				if contextName != "" {
					if data, err = renameKubeconfigContext(data, contextName); err != nil {
						return err
					}
				}

				return global.WriteKubeconfig(cmd.OutOrStdout(), target, data, merging, force)
			})
		},
	}

	cmd.Flags().BoolVarP(&force, "force", "f", false, "force overwrite of kubeconfig if already present, force overwrite on kubeconfig merge")
	cmd.Flags().BoolVarP(&merge, "merge", "m", true, "merge with existing kubeconfig")
	cmd.Flags().StringVar(&contextName, "force-context-name", "", "force context name for kubeconfig merge")

	return cmd
}

func renameKubeconfigContext(data []byte, name string) ([]byte, error) {
	k, err := kubernetes.ParseKubeconfig(data, "kubeconfig")
	if err != nil {
		return nil, err
	}

	kubernetes.RenameCurrentContext(k, name)

	return kubernetes.MarshalKubeconfig(k)
}
