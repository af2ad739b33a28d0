package talos

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/cluster/check"
)

func NewHealthCommand(g *global.Args) *cobra.Command {
	var (
		timeout                time.Duration
		controlPlanes, workers []string
		initNode, k8sEndpoint  string
	)

	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check cluster health",
		Long: `Waits until etcd is healthy on the control planes, every node's API
answers, every node has finished booting and every service is up, then
runs Kubernetes' checks, printing each check as it is met. Checks run from
the client.

Without --control-plane-nodes/--worker-nodes/--init-node the nodes are
discovered: from the cluster members the -n nodes know, or else from
etcd's member list. A check that cannot run says why it is skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				out := cmd.OutOrStdout()
				s.KubeServer = k8sEndpoint
				cl := s.Cluster()

				cps := slices.DeleteFunc(slices.Concat([]string{initNode}, controlPlanes), func(n string) bool { return n == "" })
				if extra := slices.Concat(cps, workers); len(extra) > 0 {
					cl.Nodes, cl.ControlPlanes = extra, cps
					fmt.Fprintf(out, "discovered nodes: [%s]\n", check.QuoteNodes(cl.Nodes))
				} else {
					ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
					err := check.Discover(ctx, out, cl)

					cancel()

					if err != nil {
						return err
					}
				}

				return check.Run(cmd.Context(), out, cl, timeout)
			})
		},
	}

	cmd.Flags().DurationVar(&timeout, "wait-timeout", 20*time.Minute, "timeout to wait for the cluster to be ready")
	cmd.Flags().StringSliceVar(&controlPlanes, "control-plane-nodes", nil, "specify IPs of control plane nodes")
	cmd.Flags().StringSliceVar(&workers, "worker-nodes", nil, "specify IPs of worker nodes")
	cmd.Flags().StringVar(&initNode, "init-node", "", "specify IPs of init node")
	cmd.Flags().StringVar(&k8sEndpoint, "k8s-endpoint", "", "use endpoint instead of kubeconfig default (https://host:port)")

	return cmd
}
