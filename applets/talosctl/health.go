package talosctl

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/check"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

func newHealthCommand(g *GlobalFlags) *cobra.Command {
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
			return g.withSession(false, func(s *session) error {
				out := cmd.OutOrStdout()
				s.kubeServer = k8sEndpoint
				cl := s.cluster()

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

func newConfigNewCommand(g *GlobalFlags) *cobra.Command {
	var (
		roles []string
		ttl   time.Duration
	)

	cmd := &cobra.Command{
		Use:   "new [<path>]",
		Short: "Generate a new client configuration file",
		Long: `Asks the node for a client certificate with the given roles, signed by its OS
CA, and writes a talosconfig (mode 0600) to <path>, ./talosconfig by default.
The endpoints of the current context are kept when the node gives none.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "talosconfig"
			if len(args) == 1 {
				path = args[0]
			}

			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("config file %q already exists", path)
			}

			req := &machine.GenerateClientConfigurationRequest{Roles: roles, CrtTtl: durationpb.New(ttl)}

			return g.withSession(false, func(s *session) error {
				if err := singleNode(s); err != nil {
					return err
				}

				results := fanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.GenerateClientConfiguration, error) {
					resp, err := c.Machine.GenerateClientConfiguration(ctx, req)
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				if err := reportErrors(cmd, results); err != nil {
					return err
				}

				cfg, err := talosconfig.Parse(results[0].Value.GetTalosconfig())
				if err != nil {
					return fmt.Errorf("generated talosconfig: %w", err)
				}

				for _, ctx := range cfg.Contexts {
					if len(ctx.Endpoints) == 0 && s.shared != nil {
						ctx.Endpoints = append(ctx.Endpoints, s.shared.Endpoints()...)
					}
				}

				return cfg.Save(path)
			})
		},
	}

	cmd.Flags().StringSliceVar(&roles, "roles", []string{"os:admin"}, "roles")
	cmd.Flags().DurationVar(&ttl, "crt-ttl", 87600*time.Hour, "certificate TTL")

	return cmd
}
