package mgmt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/check"
	"github.com/talosbox/talosbox/internal/cluster/timeline"
	"github.com/talosbox/talosbox/internal/provision"
	"github.com/talosbox/talosbox/internal/provision/vm"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

// mergeClusterContext puts the new cluster's context into the talosconfig
// at path and makes it current. A context of the same name can only be
// left over from a destroyed cluster (Docker refused a live name), so it is
// replaced rather than renamed aside.
func mergeClusterContext(path, name string, generated []byte, endpoints []string, node string, out io.Writer) error {
	gen, err := talosconfig.Parse(generated)
	if err != nil {
		return fmt.Errorf("generated talosconfig: %w", err)
	}

	ctx := gen.Contexts[gen.Context]
	ctx.Endpoints = endpoints
	ctx.Nodes = []string{node}

	cfg, err := talosconfig.Load(path)
	if err != nil {
		return err
	}

	if cfg.Contexts == nil {
		cfg.Contexts = map[string]*talosconfig.Context{}
	}

	verb := "merging"
	if cfg.Contexts[name] != nil {
		verb = "replacing the old context in"
	}

	cfg.Contexts[name] = ctx
	cfg.Context = name

	if err := cfg.Save(path); err != nil {
		return err
	}

	fmt.Fprintf(out, "%s talosconfig %s (context %q, endpoint %s, node %s)\n", verb, path, name, strings.Join(endpoints, ","), node)

	return nil
}

// waitClusterHealthy bootstraps etcd on the first control plane (unless
// skipped), then runs the health checks against every node of a new
// cluster, through the endpoints. Each step passed is stamped on tl, and
// once healthy the nodes' and the API server's own steps are added.
func waitClusterHealthy(ctx context.Context, out io.Writer, tl *timeline.Timeline, tc []byte, endpoints []string, nodes []nodePlan, bootstrap bool, server string, timeout time.Duration) error {
	cfg, err := talosconfig.Parse(tc)
	if err != nil {
		return err
	}

	opts, err := client.OptionsFromContext(cfg.Contexts[cfg.Context], endpoints)
	if err != nil {
		return err
	}

	c, err := client.New(opts)
	if err != nil {
		return err
	}

	s := &global.Session{Shared: c, KubeServer: server}
	defer s.Close()

	s.ControlPlanes = []string{}

	for _, n := range nodes {
		s.Nodes = append(s.Nodes, n.ip.String())
		if n.typ == provision.TypeControlPlane {
			s.ControlPlanes = append(s.ControlPlanes, n.ip.String())
		}
	}

	onPass := func(name string) { tl.Mark("waiting for " + name + ": OK") }

	if bootstrap {
		bctx, cancel := context.WithTimeout(ctx, timeout)
		err := bootstrapEtcd(bctx, out, s.On(s.ControlPlanes[:1]), onPass)

		cancel()

		if err != nil {
			return err
		}
	}

	cl := s.Cluster()
	cl.OnPass = onPass

	if err := check.Run(ctx, out, cl, timeout); err != nil {
		return err
	}

	s.KubeClient = cl.Kube

	for _, n := range nodes {
		tl.Name(n.ip.String(), n.name)
	}

	if err := timeline.Collect(ctx, tl, cl); err != nil {
		fmt.Fprintf(out, "the timeline misses some steps: %v\n", err)
	}

	return mergeClusterKubeconfig(ctx, out, s, server)
}

// mergeClusterKubeconfig merges the new cluster's admin kubeconfig into
// the default kubeconfig, as talosctl cluster create does, when the
// cluster runs Kubernetes; server ("" for the cluster's endpoint) is
// --endpoint's.
func mergeClusterKubeconfig(ctx context.Context, out io.Writer, s *global.Session, server string) error {
	if s.KubeClient == nil {
		return nil
	}

	results := global.FanOut(ctx, s.On(s.ControlPlanes[:1]), func(ctx context.Context, c *client.Client) ([]byte, error) {
		return c.Kubeconfig(ctx)
	})

	if err := results[0].Err; err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}

	path, _, err := global.KubeconfigTarget(nil, true)
	if err != nil {
		return err
	}

	data := results[0].Value
	if server != "" {
		if data, err = pointKubeconfig(data, server); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "merging kubeconfig into %q\n", path)

	return global.WriteKubeconfig(out, path, data, true, true)
}

// bootstrapEtcd asks the first control plane to bootstrap etcd, retrying
// while its API or its etcd service are still starting.
func bootstrapEtcd(ctx context.Context, out io.Writer, s *global.Session, onPass func(string)) error {
	cl := s.Cluster()
	cl.OnPass = onPass

	return check.Wait(ctx, out, cl, check.Check{Name: "etcd to be bootstrapped on " + s.Nodes[0], Run: func(ctx context.Context, cl *check.Cluster) error {
		results := global.FanOut(ctx, s, func(ctx context.Context, c *client.Client) (struct{}, error) {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()

			resp, err := c.Machine.Bootstrap(actx, &machine.BootstrapRequest{})
			if status.Code(err) == codes.AlreadyExists {
				return struct{}{}, nil // a retry after a lost answer
			}

			if err != nil {
				return struct{}{}, err
			}

			_, err = client.FirstMessage(resp.GetMessages())

			return struct{}{}, err
		})

		return check.NodeErrors(cl, results)
	}})
}

// clusterTarget names a cluster and says which provisioner made it.
type clusterTarget struct {
	name, provisioner, state string
}

func (t *clusterTarget) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&t.name, "name", defaultClusterName, "the name of the cluster")
	fl.StringVar(&t.provisioner, "provisioner", "", "docker or qemu (default: qemu when --state has the cluster, else docker)")
	fl.StringVar(&t.state, "state", "", "qemu: directory path of the cluster state (default ~/.talos/clusters)")
}

// resolve picks the provisioner: a qemu cluster is known by its state
// directory; anything else is asked of Docker.
func (t *clusterTarget) resolve() (vm.Options, bool, error) {
	dir, err := defaultStateDir(t.state)
	if err != nil {
		return vm.Options{}, false, err
	}

	o := vm.Options{StateDir: dir}

	switch t.provisioner {
	case "":
		return o, vm.Exists(o, t.name), nil
	case "qemu":
		return o, true, nil
	case "docker":
		return o, false, nil
	}

	return o, false, fmt.Errorf("unsupported provisioner %q: use docker or qemu", t.provisioner)
}

func newClusterDestroyCommand(*global.Args) *cobra.Command {
	var t clusterTarget

	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Destroys a local docker-based or QEMU-based cluster",
		Long: `docker: removes the cluster's containers, network and state volumes: every
object labelled talosbox.cluster.name=<name>, and nothing else.
qemu: stops the cluster's virtual machines and its switch (the tap goes with
it) and removes its state directory, disks included.

The talosconfig context is kept; 'talosctl config remove' deletes it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			start := time.Now()

			o, isVM, err := t.resolve()
			if err != nil {
				return err
			}

			fmt.Fprintf(out, "destroying cluster %q\n", t.name)

			if isVM {
				err = vm.Destroy(o, t.name, func(s string) { fmt.Fprintln(out, s) })
				if errors.Is(err, vm.ErrNotFound) {
					return fmt.Errorf("cluster %q not found: %w", t.name, err)
				}
			} else {
				err = destroyDocker(cmd.Context(), t.name, out)
			}

			if err != nil {
				return err
			}

			fmt.Fprintf(out, "cluster %q destroyed in %s\n", t.name, time.Since(start).Round(time.Millisecond))

			return nil
		},
	}

	t.register(cmd)

	return cmd
}

func destroyDocker(ctx context.Context, name string, out io.Writer) error {
	d, err := provision.New(ctx, provision.Options{})
	if err != nil {
		return err
	}
	defer d.Close() //nolint:errcheck // nothing to do about it

	err = d.Destroy(ctx, name, func(ev provision.Event) { fmt.Fprintf(out, "%s\n", ev) })
	if errors.Is(err, provision.ErrNotFound) {
		return fmt.Errorf("cluster %q not found: no container, network or volume carries the label talosbox.cluster.name=%s", name, name)
	}

	return err
}

func newClusterShowCommand(*global.Args) *cobra.Command {
	var t clusterTarget

	cmd := &cobra.Command{
		Use:   "show",
		Short: "Shows info about a local provisioned kubernetes cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, isVM, err := t.resolve()
			if err != nil {
				return err
			}

			if isVM {
				st, err := vm.Load(o, t.name)
				if err != nil {
					return err
				}

				return writeVMClusterShow(cmd.OutOrStdout(), st)
			}

			d, err := provision.New(cmd.Context(), provision.Options{})
			if err != nil {
				return err
			}
			defer d.Close() //nolint:errcheck // nothing to do about it

			c, err := d.Show(cmd.Context(), t.name)
			if errors.Is(err, provision.ErrNotFound) {
				return fmt.Errorf("cluster %q not found", t.name)
			}

			if err != nil {
				return err
			}

			return writeClusterShow(cmd.OutOrStdout(), c)
		},
	}

	t.register(cmd)

	return cmd
}

// writeVMClusterShow prints a qemu cluster like writeClusterShow, with
// each node's disk and its QEMU process's state.
func writeVMClusterShow(out io.Writer, st *vm.State) error {
	w := global.NewTable(out)
	fmt.Fprintf(w, "PROVISIONER\t%s\n", st.Provisioner)
	fmt.Fprintf(w, "NAME\t%s\n", st.Name)
	fmt.Fprintf(w, "NETWORK NAME\t%s\n", st.Tap)
	fmt.Fprintf(w, "NETWORK CIDR\t%s\n", st.CIDR)
	fmt.Fprintf(w, "NETWORK GATEWAY\t%s\n", st.Gateway)
	fmt.Fprintf(w, "STATE DIRECTORY\t%s\n", st.Dir())

	if err := w.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nNODES:\n\n")

	w = global.NewTable(out)
	fmt.Fprintf(w, "NAME\tTYPE\tIP\tCPU\tRAM\tDISK\tSTATE\n")

	for i := range st.Nodes {
		n := &st.Nodes[i]

		state := "stopped"
		if st.Running(n) {
			state = "running"
		}

		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.Name, n.Type, n.IP, n.CPUs,
			global.HumanBytes(uint64(n.MemoryMiB)<<20), global.HumanBytes(uint64(n.DiskMiB)<<20), state)
	}

	return w.Flush()
}

// writeClusterShow prints the cluster as talosctl does: the network, then
// a table of nodes.
func writeClusterShow(out io.Writer, c *provision.Cluster) error {
	w := global.NewTable(out)
	fmt.Fprintf(w, "PROVISIONER\tdocker\n")
	fmt.Fprintf(w, "NAME\t%s\n", c.Name)
	fmt.Fprintf(w, "NETWORK NAME\t%s\n", c.Network.Name)
	fmt.Fprintf(w, "NETWORK CIDR\t%s\n", c.Network.CIDR)
	fmt.Fprintf(w, "NETWORK GATEWAY\t%s\n", c.Network.Gateway)

	mtu := "-"
	if c.Network.MTU > 0 {
		mtu = fmt.Sprint(c.Network.MTU)
	}

	fmt.Fprintf(w, "NETWORK MTU\t%s\n", mtu)

	if err := w.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nNODES:\n\n")

	w = global.NewTable(out)
	fmt.Fprintf(w, "NAME\tTYPE\tIP\tCPU\tRAM\tSTATE\tPORTS\n")

	for _, n := range c.Nodes {
		cpu, ram := "-", "-"
		if n.NanoCPUs > 0 {
			cpu = fmt.Sprintf("%.2f", float64(n.NanoCPUs)/1e9)
		}

		if n.Memory > 0 {
			ram = global.HumanBytes(uint64(n.Memory))
		}

		var ports []string
		for _, p := range n.Ports {
			ports = append(ports, p.String())
		}

		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Type, n.IP, cpu, ram, n.State, global.OrDash(strings.Join(ports, ",")))
	}

	return w.Flush()
}
