package talosctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

// healthCheck is one condition `health` waits for. check returns nil when
// met, or why not.
type healthCheck struct {
	name  string
	check func(ctx context.Context, s *session) error
	etcd  bool // about the control planes' etcd
}

// healthChecks are run in order; the etcd ones look at the control-plane
// nodes only (s.controlPlanes).
var healthChecks = []healthCheck{
	{"etcd to be healthy", checkEtcdHealthy, true},
	{"etcd members to be consistent across nodes", checkEtcdConsistent, true},
	{"etcd members to be control plane nodes", checkEtcdMembersAreControlPlanes, true},
	{"the shared IP to be held by exactly one control plane node", checkVIP, true},
	{"apid to be ready", checkAPI, false},
	{"all nodes to finish boot sequence", checkBooted, false},
	{"all services to be up", checkServices, false},
}

// joinNodeErrors reports every failing node of a check in one message.
func joinNodeErrors[T any](results []client.Result[T], s *session) error {
	var msgs []string

	for _, r := range results {
		if r.Err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %s", s.nodeName(r.Node, nil), client.Message(r.Err)))
		}
	}

	if len(msgs) == 0 {
		return nil
	}

	return errors.New(strings.Join(msgs, "; "))
}

func checkAPI(ctx context.Context, s *session) error {
	return joinNodeErrors(fanOut(ctx, s, func(ctx context.Context, c *client.Client) (struct{}, error) {
		resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
		if err != nil {
			return struct{}{}, err
		}

		_, err = firstMessage(resp.GetMessages())

		return struct{}{}, err
	}), s)
}

func checkBooted(ctx context.Context, s *session) error {
	return joinNodeErrors(fanOut(ctx, s, func(ctx context.Context, c *client.Client) (struct{}, error) {
		st := machineState(ctx, c)
		if st.err != nil {
			return struct{}{}, st.err
		}

		if st.stage != "running" {
			return struct{}{}, fmt.Errorf("stage is %s", st.stage)
		}

		return struct{}{}, nil
	}), s)
}

// serviceUp: running and not failing its health check, or done on purpose.
func serviceUp(svc *machine.ServiceInfo) bool {
	switch svc.GetState() {
	case "Finished", "Skipped":
		return true
	case "Running":
		return svc.GetHealth().GetUnknown() || svc.GetHealth().GetHealthy()
	default:
		return false
	}
}

func checkServices(ctx context.Context, s *session) error {
	return eachServiceList(ctx, s, func(list *machine.ServiceList) error {
		var down []string

		for _, svc := range list.GetServices() {
			if !serviceUp(svc) {
				down = append(down, fmt.Sprintf("%s is %s (health %s)", svc.GetId(), svc.GetState(), healthStatus(svc.GetHealth())))
			}
		}

		if len(down) > 0 {
			return errors.New(strings.Join(down, ", "))
		}

		return nil
	})
}

// eachServiceList checks every node's services with check, and reports
// each failing node.
func eachServiceList(ctx context.Context, s *session, check func(*machine.ServiceList) error) error {
	results := serviceLists(ctx, s)

	for i, r := range results {
		if r.Err == nil {
			results[i].Err = check(r.Value)
		}
	}

	return joinNodeErrors(results, s)
}

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

				cps := slices.DeleteFunc(slices.Concat([]string{initNode}, controlPlanes), func(n string) bool { return n == "" })
				if extra := slices.Concat(cps, workers); len(extra) > 0 {
					s.nodes, s.controlPlanes = extra, cps
					fmt.Fprintf(out, "discovered nodes: [%s]\n", quoteJoin(s.nodes))
				} else {
					ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
					err := discoverNodes(ctx, out, s)

					cancel()

					if err != nil {
						return err
					}
				}

				return runHealthChecks(cmd.Context(), out, s, timeout)
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

// runHealthChecks waits for every check in turn, within timeout.
func runHealthChecks(ctx context.Context, out io.Writer, s *session, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if s.controlPlanes == nil {
		cps, err := discoverControlPlanes(ctx, s)
		if err != nil {
			return err
		}

		s.controlPlanes = cps
	}

	if len(s.controlPlanes) == 0 {
		fmt.Fprintln(out, "skipping etcd checks: no control plane node runs etcd")
	}

	for _, hc := range healthChecks {
		if hc.etcd && len(s.controlPlanes) == 0 {
			continue
		}

		if err := waitCheck(ctx, out, s, hc); err != nil {
			return err
		}
	}

	return runKubernetesChecks(ctx, out, s)
}

// runKubernetesChecks runs Kubernetes' checks where the cluster runs it:
// a cluster without kubelets, or a client that may not get a kubeconfig,
// is told so instead of failing.
func runKubernetesChecks(ctx context.Context, out io.Writer, s *session) error {
	if len(s.controlPlanes) == 0 {
		fmt.Fprintln(out, "skipping Kubernetes checks: no control plane node known")
		return nil
	}

	kubelets := 0
	_ = eachServiceList(ctx, s, func(l *machine.ServiceList) error {
		for _, svc := range l.GetServices() {
			if svc.GetId() == "kubelet" {
				kubelets++
			}
		}

		return nil
	})

	if kubelets == 0 {
		fmt.Fprintln(out, "skipping Kubernetes checks: no node runs the kubelet")
		return nil
	}

	if _, err := s.kube(ctx); errors.Is(err, errNoAdmin) {
		fmt.Fprintln(out, "skipping Kubernetes checks: getting a kubeconfig needs the os:admin role")
		return nil
	}

	for _, hc := range kubernetesChecks {
		if err := waitCheck(ctx, out, s, hc); err != nil {
			return err
		}
	}

	return nil
}

func quoteJoin(nodes []string) string {
	q := make([]string, len(nodes))
	for i, n := range nodes {
		q[i] = fmt.Sprintf("%q", n)
	}

	return strings.Join(q, " ")
}

// waitCheck retries a check until it passes, printing its reason whenever
// it changes, then `waiting for NAME: OK`.
func waitCheck(ctx context.Context, out io.Writer, s *session, hc healthCheck) error {
	last := ""

	tick := time.NewTicker(pollInterval)
	defer tick.Stop()

	for {
		err := hc.check(ctx, s)
		if errors.Is(err, errSkipped) {
			fmt.Fprintf(out, "waiting for %s: skipped (%s)\n", hc.name, err)
			return nil
		}

		if err == nil {
			fmt.Fprintf(out, "waiting for %s: OK\n", hc.name)
			return nil
		}

		if msg := err.Error(); msg != last {
			fmt.Fprintf(out, "waiting for %s: %s\n", hc.name, msg)
			last = msg
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: timed out: %s", hc.name, last)
		case <-tick.C:
		}
	}
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

					return firstMessage(resp.GetMessages())
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
