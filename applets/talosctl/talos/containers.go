package talos

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// The containerd namespaces talosctl asks about.
const (
	systemNamespace = "system"
	k8sNamespace    = "k8s.io"
)

// containerScope is what -k selects: Kubernetes through the CRI, or the
// node's own containers in containerd's system namespace.
func containerScope(kubernetes bool) (string, common.ContainerDriver) {
	if kubernetes {
		return k8sNamespace, common.ContainerDriver_CRI
	}

	return systemNamespace, common.ContainerDriver_CONTAINERD
}

// addKubernetesFlags adds -k and Talos's hidden --use-cri, which newer
// Talos accepts and ignores (-k uses the CRI already).
func addKubernetesFlags(cmd *cobra.Command, kubernetes *bool) {
	cmd.Flags().BoolVarP(kubernetes, "kubernetes", "k", false, "use the k8s.io containerd namespace")
	cmd.Flags().Bool("use-cri", false, "use the CRI driver")
	cmd.Flags().MarkHidden("use-cri") //nolint:errcheck // the flag exists
}

func NewContainersCommand(g *global.Args) *cobra.Command {
	var kubernetes bool

	cmd := &cobra.Command{
		Use:     "containers",
		Aliases: []string{"c"},
		Short:   "List containers",
		Long: `Lists the containers of containerd's system namespace, or with -k the Kubernetes
pods (their sandboxes) and, indented under each, the pod's containers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, driver := containerScope(kubernetes)
			req := &machine.ContainersRequest{Namespace: ns, Driver: driver}

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.Container, error) {
					resp, err := c.Machine.Containers(ctx, req)
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				rows := containerRows(s, results, func(node string, v *machine.Container) (rows []containerRow) {
					for _, c := range v.GetContainers() {
						rows = append(rows, containerRow{node: node, namespace: c.GetNamespace(), pod: c.GetPodId(), id: c.GetId(), rest: []string{
							c.GetImage(), fmt.Sprint(c.GetPid()), c.GetStatus(),
						}})
					}

					return rows
				})

				if err := writeContainerTable(cmd.OutOrStdout(), "NODE\tNAMESPACE\tID\tIMAGE\tPID\tSTATUS", rows); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	addKubernetesFlags(cmd, &kubernetes)

	return cmd
}

func NewStatsCommand(g *global.Args) *cobra.Command {
	var kubernetes bool

	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Get container stats",
		Long: `Shows each container's memory use (MB, the working set for Kubernetes) and its
cumulative CPU time (nanoseconds), for containerd's system namespace or with -k
for the Kubernetes pods.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, driver := containerScope(kubernetes)
			req := &machine.StatsRequest{Namespace: ns, Driver: driver}

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.Stats, error) {
					resp, err := c.Machine.Stats(ctx, req)
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				rows := containerRows(s, results, func(node string, v *machine.Stats) (rows []containerRow) {
					for _, st := range v.GetStats() {
						rows = append(rows, containerRow{node: node, namespace: st.GetNamespace(), pod: st.GetPodId(), id: st.GetId(), rest: []string{
							fmt.Sprintf("%.2f", float64(st.GetMemoryUsage())*1e-6), fmt.Sprint(st.GetCpuUsage()),
						}})
					}

					return rows
				})

				if err := writeContainerTable(cmd.OutOrStdout(), "NODE\tNAMESPACE\tID\tMEMORY(MB)\tCPU", rows); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	addKubernetesFlags(cmd, &kubernetes)

	return cmd
}

// containerRows collects the rows of every node that answered; the errors
// of the others are reported after the table.
func containerRows[T interface{ GetMetadata() *common.Metadata }](s *global.Session, results []client.Result[T], rowsOf func(node string, v T) []containerRow) []containerRow {
	var rows []containerRow

	for _, r := range results {
		if r.Err == nil {
			rows = append(rows, rowsOf(s.NodeName(r.Node, r.Value.GetMetadata()), r.Value)...)
		}
	}

	return rows
}

// containerRow is one line of the containers and stats tables; rest are
// the columns after the ID.
type containerRow struct {
	node, namespace, pod, id string
	rest                     []string
}

// writeContainerTable prints rows per node (in the order the nodes were
// given) and, within a node, each pod's sandbox before its containers,
// which are indented under it. Ordering by pod first keeps a pod's
// containers under it even when another pod's name extends its name
// ("ns/web" and "ns/web-2"): by the ID alone, "ns/web-2" sorts between
// "ns/web" and "ns/web:app".
func writeContainerTable(out io.Writer, header string, rows []containerRow) error {
	nodeOrder := map[string]int{}
	for _, r := range rows {
		if _, ok := nodeOrder[r.node]; !ok {
			nodeOrder[r.node] = len(nodeOrder)
		}
	}

	slices.SortStableFunc(rows, func(a, b containerRow) int {
		return cmp.Or(
			cmp.Compare(nodeOrder[a.node], nodeOrder[b.node]),
			strings.Compare(a.pod, b.pod),
			cmp.Compare(boolRank(a.id != a.pod), boolRank(b.id != b.pod)),
			strings.Compare(a.id, b.id),
		)
	})

	w := global.NewTable(out)
	fmt.Fprintln(w, header)

	for _, r := range rows {
		display := r.id
		if r.id != r.pod {
			display = "└─ " + display
		}

		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.node, r.namespace, display, strings.Join(r.rest, "\t"))
	}

	return w.Flush()
}

func boolRank(b bool) int {
	if b {
		return 1
	}

	return 0
}
