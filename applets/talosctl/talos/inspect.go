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
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
)

// NewInspectCommand is `talosctl inspect`.
func NewInspectCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Inspect internals of Talos",
		Args:  cobra.NoArgs,
	}

	var withResources bool

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

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (string, error) {
					resp, err := c.Inspect.ControllerRuntimeDependencies(ctx, &emptypb.Empty{})
					if err != nil {
						return "", err
					}

					deps, err := client.FirstMessage(resp.GetMessages())
					if err != nil {
						return "", err
					}

					var b strings.Builder

					if !withResources {
						writeDependencyGraph(&b, deps.GetEdges())

						return b.String(), nil
					}

					writeResourceGraph(&b, deps.GetEdges(), liveResources(ctx, c, deps.GetEdges()))

					return b.String(), nil
				})

				for _, r := range results {
					if r.Err == nil {
						fmt.Fprint(cmd.OutOrStdout(), r.Value)
					}
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	deps.Flags().BoolVar(&withResources, "with-resources", false, "display live resource information with dependencies")
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

// liveResources lists the resources of every type in the graph (only
// their metadata is drawn; sensitive specs come redacted anyway). A type
// that cannot be listed is left out, as Talos does.
func liveResources(ctx context.Context, c *client.Client, edges []*inspect.ControllerDependencyEdge) map[string][]*resource.ResourceMetadata {
	out := map[string][]*resource.ResourceMetadata{}

	for _, e := range edges {
		typ := e.GetResourceType()
		if _, done := out[typ]; done {
			continue
		}

		out[typ] = nil

		stream, err := c.Resource.List(ctx, &resource.ListRequest{Namespace: e.GetResourceNamespace(), Type: typ, Redact: true})
		if err != nil {
			continue
		}

		for {
			msg, err := stream.Recv()
			if err != nil {
				break
			}

			if md := msg.GetResource().GetMetadata(); md != nil {
				out[typ] = append(out[typ], md)
			}
		}
	}

	return out
}

// writeResourceGraph draws each resource of each type inside its type's
// cluster, and the controllers' edges to the resources they read and
// the ones they own, as Talos's --with-resources does.
func writeResourceGraph(w io.Writer, edges []*inspect.ControllerDependencyEdge, res map[string][]*resource.ResourceMetadata) {
	id := func(md *resource.ResourceMetadata) string {
		return md.GetNamespace() + "/" + md.GetType() + "/" + md.GetId()
	}

	fmt.Fprintln(w, "digraph {")
	fmt.Fprintln(w, "\trankdir=LR;")

	controllers := map[string]bool{}
	for _, e := range edges {
		controllers[e.GetControllerName()] = true
	}

	for _, name := range sortedKeys(controllers) {
		fmt.Fprintf(w, "\t%q [shape=box, style=filled, fillcolor=\"#d8e7f5\"];\n", name)
	}

	types := map[string]bool{}
	for typ := range res {
		types[typ] = true
	}

	for _, typ := range sortedKeys(types) {
		if len(res[typ]) == 0 {
			continue
		}

		fmt.Fprintf(w, "\tsubgraph %q {\n\t\tlabel=%q;\n", "cluster_"+typ, typ)

		for _, md := range res[typ] {
			fmt.Fprintf(w, "\t\t%q [shape=note, style=filled, fillcolor=azure2];\n", id(md))
		}

		fmt.Fprintln(w, "\t}")
	}

	for _, e := range edges {
		for _, md := range res[e.GetResourceType()] {
			if e.GetResourceId() != "" && md.GetId() != e.GetResourceId() {
				continue
			}

			switch e.GetEdgeType() {
			case inspect.DependencyEdgeType_OUTPUT_EXCLUSIVE, inspect.DependencyEdgeType_OUTPUT_SHARED:
				if md.GetOwner() == e.GetControllerName() {
					fmt.Fprintf(w, "\t%q -> %q [color=\"#1f77b4\"];\n", e.GetControllerName(), id(md))
				}
			case inspect.DependencyEdgeType_INPUT_STRONG:
				fmt.Fprintf(w, "\t%q -> %q [color=\"#2ca02c\"];\n", id(md), e.GetControllerName())
			case inspect.DependencyEdgeType_INPUT_WEAK:
				fmt.Fprintf(w, "\t%q -> %q [color=\"#2ca02c\", style=dashed];\n", id(md), e.GetControllerName())
			case inspect.DependencyEdgeType_INPUT_DESTROY_READY:
			}
		}
	}

	fmt.Fprintln(w, "}")
}
