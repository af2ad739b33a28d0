package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/inspect"
	"github.com/talosbox/talosbox/internal/bus"
)

// inspectServer is InspectService: `talosctl inspect dependencies`.
type inspectServer struct {
	inspect.UnimplementedInspectServiceServer

	m *machineServer
}

// ControllerRuntimeDependencies is the node's controller graph: an edge
// per declared input and output. An output's namespace is its type's
// default one (the bus declares outputs by type).
func (s *inspectServer) ControllerRuntimeDependencies(context.Context, *emptypb.Empty) (*inspect.ControllerRuntimeDependenciesResponse, error) {
	rt := s.m.node.Controllers()
	if rt == nil {
		return nil, status.Error(codes.Unavailable, "the node is starting: its controllers are not running yet")
	}

	var edges []*inspect.ControllerDependencyEdge

	for _, c := range rt.Dependencies() {
		for _, in := range c.Inputs {
			kind := inspect.DependencyEdgeType_INPUT_WEAK
			if in.Kind == bus.InputStrong {
				kind = inspect.DependencyEdgeType_INPUT_STRONG
			}

			edges = append(edges, &inspect.ControllerDependencyEdge{
				ControllerName: c.Name, EdgeType: kind,
				ResourceNamespace: in.Namespace, ResourceType: in.Type, ResourceId: in.ID,
			})
		}

		for _, out := range c.Outputs {
			kind := inspect.DependencyEdgeType_OUTPUT_EXCLUSIVE
			if out.Kind == bus.OutputShared {
				kind = inspect.DependencyEdgeType_OUTPUT_SHARED
			}

			ns := ""
			if d, ok := s.m.node.Registry().Get(out.Type); ok {
				ns = d.DefaultNamespace
			}

			edges = append(edges, &inspect.ControllerDependencyEdge{
				ControllerName: c.Name, EdgeType: kind, ResourceNamespace: ns, ResourceType: out.Type,
			})
		}
	}

	return &inspect.ControllerRuntimeDependenciesResponse{Messages: []*inspect.ControllerRuntimeDependency{{Edges: edges}}}, nil
}
