package clienttest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
)

// Node is the state one fake node answers from. Tests fill it directly
// before the first call; the fake takes Server.mu while reading or
// changing it during calls.
type Node struct {
	Name        string
	Version     *machine.VersionInfo
	Services    []*machine.ServiceInfo
	Logs        map[string][]string // service ID -> lines
	Dmesg       []string
	Events      []*machine.Event
	Resources   []*resource.Resource
	Files       map[string]string // absolute path -> content; directories implied
	Mounts      []*machine.MountStat
	Memory      *machine.MemInfo
	Processes   []*machine.ProcessInfo
	Definitions []*resource.ResourceDefinition

	// WatchEvents are sent after the bootstrap of a watch, then the stream ends.
	WatchEvents []*resource.WatchResponse

	// ApplyHook, when set, decides an ApplyConfiguration (return an error
	// to refuse the config); otherwise the config is accepted.
	ApplyHook func(req *machine.ApplyConfigurationRequest) (*machine.ApplyConfiguration, error)

	// LifecycleHook runs (under the fake's lock) after a reboot, shutdown
	// or reset is accepted, to play the node's reaction.
	LifecycleHook func(n *Node, action string)

	// Down makes the node unreachable, as after a shutdown.
	Down bool

	// Recorded calls.
	Applied  []*machine.ApplyConfigurationRequest
	Reboots  int
	Shutdown int
	Resets   []*machine.ResetRequest
	Actions  []string // "start apid", "stop apid", ...
}

// Server is a fake apid: it routes by the `node` metadata to one of Nodes
// (Self when there is none) and answers like apid, including an error for
// an unknown node.
type Server struct {
	machine.UnimplementedMachineServiceServer

	mu    sync.Mutex
	Self  string
	Nodes map[string]*Node
	// SeenNodes records the node metadata of every call, in order.
	SeenNodes []string
	// Addr is where Start serves.
	Addr string
}

// Start serves s on 127.0.0.1 with p's certificates (server-only TLS when
// maintenance) and stops it when the test ends.
func Start(t testing.TB, p *PKI, s *Server, maintenance bool) string {
	t.Helper()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(p.ServerTLS(t, maintenance))))
	machine.RegisterMachineServiceServer(srv, s)
	resource.RegisterResourceServiceServer(srv, resources{Server: s})

	go srv.Serve(ln) //nolint:errcheck // ends with Stop

	t.Cleanup(srv.Stop)

	s.Addr = ln.Addr().String()

	return s.Addr
}

// node picks the node a call is for.
func (s *Server) node(ctx context.Context) (*Node, error) {
	name := s.Self

	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("node"); len(v) > 0 {
			name = v[0]
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()

	s.SeenNodes = append(s.SeenNodes, name)

	n, ok := s.Nodes[name]
	if !ok || n.Down {
		return nil, status.Errorf(codes.Unavailable, "connection error: dial tcp %s:50000: connect: no route to host", name)
	}

	return n, nil
}

func (n *Node) hook(action string) {
	if n.LifecycleHook != nil {
		n.LifecycleHook(n, action)
	}
}

func md(n *Node) *common.Metadata { return &common.Metadata{Hostname: n.Name} }

// Locked runs fn under the fake's lock, for tests that read recorded calls.
func (s *Server) Locked(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()

	fn()
}

func (s *Server) Version(ctx context.Context, _ *emptypb.Empty) (*machine.VersionResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	return &machine.VersionResponse{Messages: []*machine.Version{{Metadata: md(n), Version: n.Version, Platform: &machine.PlatformInfo{Name: "container", Mode: "container"}}}}, nil
}

func (s *Server) ServiceList(ctx context.Context, _ *emptypb.Empty) (*machine.ServiceListResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	return &machine.ServiceListResponse{Messages: []*machine.ServiceList{{Metadata: md(n), Services: n.Services}}}, nil
}

func (s *Server) serviceAction(ctx context.Context, verb, id string) (*Node, string, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, "", err
	}

	s.mu.Lock()
	defer s.mu.Unlock()

	for _, svc := range n.Services {
		if svc.GetId() == id {
			n.Actions = append(n.Actions, verb+" "+id)
			return n, fmt.Sprintf("Service %q %s", id, map[string]string{"start": "started", "stop": "stopped", "restart": "restarted"}[verb]), nil
		}
	}

	return nil, "", status.Errorf(codes.NotFound, "service %q not defined", id)
}

func (s *Server) ServiceStart(ctx context.Context, req *machine.ServiceStartRequest) (*machine.ServiceStartResponse, error) {
	n, resp, err := s.serviceAction(ctx, "start", req.GetId())
	if err != nil {
		return nil, err
	}

	return &machine.ServiceStartResponse{Messages: []*machine.ServiceStart{{Metadata: md(n), Resp: resp}}}, nil
}

func (s *Server) ServiceStop(ctx context.Context, req *machine.ServiceStopRequest) (*machine.ServiceStopResponse, error) {
	n, resp, err := s.serviceAction(ctx, "stop", req.GetId())
	if err != nil {
		return nil, err
	}

	return &machine.ServiceStopResponse{Messages: []*machine.ServiceStop{{Metadata: md(n), Resp: resp}}}, nil
}

func (s *Server) ServiceRestart(ctx context.Context, req *machine.ServiceRestartRequest) (*machine.ServiceRestartResponse, error) {
	n, resp, err := s.serviceAction(ctx, "restart", req.GetId())
	if err != nil {
		return nil, err
	}

	return &machine.ServiceRestartResponse{Messages: []*machine.ServiceRestart{{Metadata: md(n), Resp: resp}}}, nil
}

// sendLines streams lines, the last tail of them when tail >= 0.
func sendLines(stream grpc.ServerStreamingServer[common.Data], n *Node, lines []string, tail int) error {
	if tail >= 0 && tail < len(lines) {
		lines = lines[len(lines)-tail:]
	}

	for _, l := range lines {
		if err := stream.Send(&common.Data{Metadata: md(n), Bytes: []byte(l + "\n")}); err != nil {
			return err
		}
	}

	return nil
}

func (s *Server) Logs(req *machine.LogsRequest, stream grpc.ServerStreamingServer[common.Data]) error {
	n, err := s.node(stream.Context())
	if err != nil {
		return err
	}

	lines, ok := n.Logs[req.GetId()]
	if !ok {
		return status.Errorf(codes.NotFound, "log %q not found", req.GetId())
	}

	return sendLines(stream, n, lines, int(req.GetTailLines()))
}

func (s *Server) Dmesg(req *machine.DmesgRequest, stream grpc.ServerStreamingServer[common.Data]) error {
	n, err := s.node(stream.Context())
	if err != nil {
		return err
	}

	return sendLines(stream, n, n.Dmesg, -1)
}

func (s *Server) Events(req *machine.EventsRequest, stream grpc.ServerStreamingServer[machine.Event]) error {
	n, err := s.node(stream.Context())
	if err != nil {
		return err
	}

	events := n.Events
	if t := int(req.GetTailEvents()); t >= 0 && t < len(events) {
		events = events[len(events)-t:]
	}

	for _, e := range events {
		e.Metadata = md(n)
		if err := stream.Send(e); err != nil {
			return err
		}
	}

	return nil
}

func (s *Server) ApplyConfiguration(ctx context.Context, req *machine.ApplyConfigurationRequest) (*machine.ApplyConfigurationResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()

	reply := &machine.ApplyConfiguration{Mode: req.GetMode(), ModeDetails: "Applied configuration without a reboot"}

	if n.ApplyHook != nil {
		if reply, err = n.ApplyHook(req); err != nil {
			return nil, err
		}
	}

	if !req.GetDryRun() {
		n.Applied = append(n.Applied, req)
	}

	reply.Metadata = md(n)

	return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{reply}}, nil
}

func (s *Server) Reboot(ctx context.Context, _ *machine.RebootRequest) (*machine.RebootResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	s.Locked(func() { n.Reboots++; n.hook("reboot") })

	return &machine.RebootResponse{Messages: []*machine.Reboot{{Metadata: md(n), ActorId: "reboot-1"}}}, nil
}

func (s *Server) Shutdown(ctx context.Context, _ *machine.ShutdownRequest) (*machine.ShutdownResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	s.Locked(func() { n.Shutdown++; n.hook("shutdown") })

	return &machine.ShutdownResponse{Messages: []*machine.Shutdown{{Metadata: md(n), ActorId: "shutdown-1"}}}, nil
}

func (s *Server) Reset(ctx context.Context, req *machine.ResetRequest) (*machine.ResetResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	s.Locked(func() { n.Resets = append(n.Resets, req); n.hook("reset") })

	return &machine.ResetResponse{Messages: []*machine.Reset{{Metadata: md(n), ActorId: "reset-1"}}}, nil
}

func (s *Server) Mounts(ctx context.Context, _ *emptypb.Empty) (*machine.MountsResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	return &machine.MountsResponse{Messages: []*machine.Mounts{{Metadata: md(n), Stats: n.Mounts}}}, nil
}

func (s *Server) Memory(ctx context.Context, _ *emptypb.Empty) (*machine.MemoryResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	return &machine.MemoryResponse{Messages: []*machine.Memory{{Metadata: md(n), Meminfo: n.Memory}}}, nil
}

func (s *Server) Processes(ctx context.Context, _ *emptypb.Empty) (*machine.ProcessesResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	return &machine.ProcessesResponse{Messages: []*machine.Process{{Metadata: md(n), Processes: n.Processes}}}, nil
}

func (s *Server) GenerateClientConfiguration(ctx context.Context, req *machine.GenerateClientConfigurationRequest) (*machine.GenerateClientConfigurationResponse, error) {
	n, err := s.node(ctx)
	if err != nil {
		return nil, err
	}

	roles := strings.Join(req.GetRoles(), ",")
	cfg := fmt.Sprintf("context: generated\ncontexts:\n    generated:\n        endpoints:\n            - %s\n        ca: Y2E=\n        crt: %s\n        key: a2V5\n", n.Name, roles)

	return &machine.GenerateClientConfigurationResponse{Messages: []*machine.GenerateClientConfiguration{{
		Metadata: md(n), Ca: []byte("ca"), Crt: []byte(roles), Key: []byte("key"), Talosconfig: []byte(cfg),
	}}}, nil
}
