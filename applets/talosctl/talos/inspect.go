package talos

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/inspect"
	"github.com/talosbox/talosbox/internal/client"
)

// NewInspectCommand is `talosctl inspect`.
func NewInspectCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Inspect internals of Talos",
		Args:  cobra.NoArgs,
	}

	deps := &cobra.Command{
		Use:   "dependencies",
		Short: "Inspect controller-resource dependencies as graphviz graph.",
		Long: `Inspect controller-resource dependencies as graphviz graph.

Pipe the output of the command through the "dot" program (part of graphviz package)
to render the graph:

    talosctl inspect dependencies | dot -Tpng > graph.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*inspect.ControllerRuntimeDependency, error) {
					resp, err := c.Inspect.ControllerRuntimeDependencies(ctx, &emptypb.Empty{})
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				for _, r := range results {
					if r.Err == nil {
						writeDependencyGraph(cmd.OutOrStdout(), r.Value.GetEdges())
					}
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.AddCommand(deps)

	return cmd
}

// writeDependencyGraph draws controllers as boxes and resource types as
// ellipses, as Talos does: solid arrows for strong inputs and exclusive
// outputs, dashed for weak inputs and shared outputs.
func writeDependencyGraph(w io.Writer, edges []*inspect.ControllerDependencyEdge) {
	controllers := map[string]bool{}
	resources := map[string]bool{}

	resName := func(e *inspect.ControllerDependencyEdge) string {
		name := e.GetResourceType()
		if e.GetResourceId() != "" {
			name += "/" + e.GetResourceId()
		}

		return name
	}

	var lines []string

	for _, e := range edges {
		controllers[e.GetControllerName()] = true
		res := resName(e)
		resources[res] = true

		switch e.GetEdgeType() {
		case inspect.DependencyEdgeType_OUTPUT_EXCLUSIVE:
			lines = append(lines, fmt.Sprintf("\t%q -> %q [color=\"#1f77b4\"];", e.GetControllerName(), res))
		case inspect.DependencyEdgeType_OUTPUT_SHARED:
			lines = append(lines, fmt.Sprintf("\t%q -> %q [color=\"#1f77b4\", style=dashed];", e.GetControllerName(), res))
		case inspect.DependencyEdgeType_INPUT_STRONG:
			lines = append(lines, fmt.Sprintf("\t%q -> %q [color=\"#2ca02c\"];", res, e.GetControllerName()))
		case inspect.DependencyEdgeType_INPUT_WEAK, inspect.DependencyEdgeType_INPUT_DESTROY_READY:
			lines = append(lines, fmt.Sprintf("\t%q -> %q [color=\"#2ca02c\", style=dashed];", res, e.GetControllerName()))
		}
	}

	fmt.Fprintln(w, "digraph {")
	fmt.Fprintln(w, "\trankdir=LR;")

	for _, name := range sortedKeys(controllers) {
		fmt.Fprintf(w, "\t%q [shape=box, style=filled, fillcolor=\"#d8e7f5\"];\n", name)
	}

	for _, name := range sortedKeys(resources) {
		fmt.Fprintf(w, "\t%q [shape=ellipse];\n", name)
	}

	fmt.Fprintln(w, strings.Join(lines, "\n"))
	fmt.Fprintln(w, "}")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}

	sort.Strings(out)

	return out
}
