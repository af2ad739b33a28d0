package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/talosbox/talosbox/internal/api/inspect"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/storage"
	timeapi "github.com/talosbox/talosbox/internal/api/time"
	"github.com/talosbox/talosbox/internal/controlplane"
	"github.com/talosbox/talosbox/internal/events"
	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/version"
)

// Options are what the MachineService handlers serve.
type Options struct {
	// Node is the node the calls act on. Required.
	Node *imachine.Node
	// Plane serves the etcd calls and bootstrap; nil on a node without
	// one (they fail with FailedPrecondition).
	Plane *controlplane.Plane
	// Events is the node's event stream, which `talosctl events` follows
	// and sequences requested here are published to. Required.
	Events *events.Ring
	// Log receives what the handlers report outside a reply (etcd leave).
	Log io.Writer
	// Hostname overrides the node's name (config, then kernel): two test
	// nodes in one process need different ones.
	Hostname string
}

// Register adds MachineService and ImageService to gs. apid calls it (through
// Registrar) for every server it starts; its interceptors authenticate
// and authorize each call before a handler runs.
func Register(gs *grpc.Server, opts Options) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}

	ms := &machineServer{
		node: opts.Node, plane: opts.Plane, events: opts.Events, log: opts.Log, hostname: opts.Hostname,
	}

	machine.RegisterMachineServiceServer(gs, ms)
	machine.RegisterImageServiceServer(gs, &imageServer{m: ms})
	timeapi.RegisterTimeServiceServer(gs, &timeServer{m: ms})
	inspect.RegisterInspectServiceServer(gs, &inspectServer{m: ms})
	storage.RegisterStorageServiceServer(gs, &storageServer{m: ms})
}

// Registrar is Register as apid.Options.Register takes it.
func Registrar(opts Options) func(*grpc.Server) {
	return func(gs *grpc.Server) { Register(gs, opts) }
}

// machineServer is MachineService over machine.Node. Authorization is
// done before any of it runs (apid's interceptors); handlers only check
// what depends on the caller beyond the method (redaction).
type machineServer struct {
	machine.UnimplementedMachineServiceServer

	node     *imachine.Node
	plane    *controlplane.Plane
	events   *events.Ring
	log      io.Writer
	hostname string
}

// nodeName is the node's name: the override, machine.network.hostname,
// then the kernel's.
func (m *machineServer) nodeName() string {
	return imachine.HostnameOr(m.hostname, m.node.Config())
}

// Version reports the build, the platform and whether the node waits in
// maintenance mode.
func (m *machineServer) Version(context.Context, *emptypb.Empty) (*machine.VersionResponse, error) {
	p := m.node.Platform()

	mode := "container"
	if p.IsMetal() {
		mode = "metal"
	}

	return &machine.VersionResponse{Messages: []*machine.Version{{
		Version: &machine.VersionInfo{
			Tag:       version.Tag,
			Sha:       version.Commit,
			Built:     version.Date,
			GoVersion: runtime.Version(),
			Os:        runtime.GOOS,
			Arch:      runtime.GOARCH,
		},
		Platform:    &machine.PlatformInfo{Name: p.Name, Mode: mode},
		Maintenance: m.node.Config() == nil,
	}}}, nil
}

// Hostname is the node's name: machine.network.hostname, else the
// kernel's (networkd sets the kernel's from the config where it runs).
func (m *machineServer) Hostname(context.Context, *emptypb.Empty) (*machine.HostnameResponse, error) {
	return &machine.HostnameResponse{Messages: []*machine.Hostname{{Hostname: m.nodeName()}}}, nil
}

// supervisor is the current boot's, or Unavailable while there is none.
func (m *machineServer) supervisor() (*supervisor.Supervisor, error) {
	sup := m.node.Supervisor()
	if sup == nil {
		return nil, status.Error(codes.Unavailable, "the node is starting: no services yet")
	}

	return sup, nil
}

func (m *machineServer) ServiceList(context.Context, *emptypb.Empty) (*machine.ServiceListResponse, error) {
	sup, err := m.supervisor()
	if err != nil {
		return nil, err
	}

	var infos []*machine.ServiceInfo

	for _, st := range sup.List() {
		infos = append(infos, serviceInfo(st))
	}

	return &machine.ServiceListResponse{Messages: []*machine.ServiceList{{Services: infos}}}, nil
}

func serviceInfo(st supervisor.Status) *machine.ServiceInfo {
	evs := make([]*machine.ServiceEvent, len(st.Events))
	for i, ev := range st.Events {
		evs[i] = &machine.ServiceEvent{Msg: ev.Message, State: ev.State.String(), Ts: timestamppb.New(ev.Timestamp)}
	}

	h := &machine.ServiceHealth{Unknown: st.Health.Unknown, Healthy: st.Health.Healthy, LastMessage: st.Health.LastMessage}
	if !st.Health.LastChange.IsZero() {
		h.LastChange = timestamppb.New(st.Health.LastChange)
	}

	return &machine.ServiceInfo{Id: st.ID, State: st.State.String(), Events: &machine.ServiceEvents{Events: evs}, Health: h}
}

// serviceError maps the supervisor's errors: an unknown ID is NotFound.
func serviceError(err error) error {
	if errors.Is(err, supervisor.ErrUnknownService) {
		return status.Error(codes.NotFound, err.Error())
	}

	return status.Error(codes.FailedPrecondition, err.Error())
}

func (m *machineServer) ServiceStart(_ context.Context, req *machine.ServiceStartRequest) (*machine.ServiceStartResponse, error) {
	sup, err := m.supervisor()
	if err != nil {
		return nil, err
	}

	if err := sup.Start(req.GetId()); err != nil {
		return nil, serviceError(err)
	}

	return &machine.ServiceStartResponse{Messages: []*machine.ServiceStart{{Resp: fmt.Sprintf("Service %q started", req.GetId())}}}, nil
}

// notControllable are the services the API itself runs on: stopping or
// restarting them over the API would cut the call (and every later one)
// off, as Talos also refuses for its core services.
var notControllable = map[string]bool{"apid": true, "machined": true}

func checkControllable(id, verb string) error {
	if notControllable[id] {
		return status.Errorf(codes.FailedPrecondition, "service %q doesn't support %s via API: the node API runs on it", id, verb)
	}

	return nil
}

func (m *machineServer) ServiceStop(ctx context.Context, req *machine.ServiceStopRequest) (*machine.ServiceStopResponse, error) {
	if err := checkControllable(req.GetId(), "stop"); err != nil {
		return nil, err
	}

	sup, err := m.supervisor()
	if err != nil {
		return nil, err
	}

	if err := sup.Stop(ctx, req.GetId()); err != nil {
		return nil, serviceError(err)
	}

	return &machine.ServiceStopResponse{Messages: []*machine.ServiceStop{{Resp: fmt.Sprintf("Service %q stopped", req.GetId())}}}, nil
}

func (m *machineServer) ServiceRestart(ctx context.Context, req *machine.ServiceRestartRequest) (*machine.ServiceRestartResponse, error) {
	if err := checkControllable(req.GetId(), "restart"); err != nil {
		return nil, err
	}

	sup, err := m.supervisor()
	if err != nil {
		return nil, err
	}

	if err := sup.Restart(ctx, req.GetId()); err != nil {
		return nil, serviceError(err)
	}

	return &machine.ServiceRestartResponse{Messages: []*machine.ServiceRestart{{Resp: fmt.Sprintf("Service %q restarted", req.GetId())}}}, nil
}

// afterReply runs action once the call is over, so its answer reaches the
// client before the node stops its services (gRPC ends a unary call's
// context after the response is written). It publishes the request as
// a sequence event carrying the actor ID returned to the client.
func (m *machineServer) afterReply(ctx context.Context, sequence string, action func(context.Context) error) string {
	actor := newActorID()

	m.events.Publish(events.TypeSequence, sequence+" requested", map[string]string{"sequence": sequence, "action": "start", "actor_id": actor})

	go func() {
		<-ctx.Done()

		if err := action(context.WithoutCancel(ctx)); err != nil {
			m.events.Publish(events.TypeSequence, fmt.Sprintf("%s failed: %v", sequence, err), map[string]string{"sequence": sequence, "action": "stop", "actor_id": actor, "error": err.Error()})
		}
	}()

	return actor
}

func newActorID() string {
	b := make([]byte, 8)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read does not fail

	return hex.EncodeToString(b)
}

// Reboot answers, then reboots (in-process in container mode). The modes
// (powercycle, force) make no difference here yet.
func (m *machineServer) Reboot(ctx context.Context, _ *machine.RebootRequest) (*machine.RebootResponse, error) {
	actor := m.afterReply(ctx, "reboot", m.node.Reboot)

	return &machine.RebootResponse{Messages: []*machine.Reboot{{ActorId: actor}}}, nil
}

// Shutdown answers, then stops the node (machined powers off on metal),
// cordoning and draining it first unless --force, as in Talos.
func (m *machineServer) Shutdown(ctx context.Context, req *machine.ShutdownRequest) (*machine.ShutdownResponse, error) {
	shutdown := m.node.ShutdownGracefully
	if req.GetForce() {
		shutdown = m.node.Shutdown
	}

	actor := m.afterReply(ctx, "shutdown", shutdown)

	return &machine.ShutdownResponse{Messages: []*machine.Shutdown{{ActorId: actor}}}, nil
}

// Reset checks the labels first (a wrong one is the caller's error and
// must be answered), then answers and resets.
func (m *machineServer) Reset(ctx context.Context, req *machine.ResetRequest) (*machine.ResetResponse, error) {
	opts := imachine.ResetOptions{Graceful: req.GetGraceful(), Reboot: req.GetReboot()}

	for _, p := range req.GetSystemPartitionsToWipe() {
		if p.GetLabel() != "STATE" && p.GetLabel() != "EPHEMERAL" {
			return nil, status.Errorf(codes.InvalidArgument, "reset: unknown system label %q: use STATE or EPHEMERAL", p.GetLabel())
		}

		if p.GetWipe() && !slices.Contains(opts.SystemLabelsToWipe, p.GetLabel()) {
			opts.SystemLabelsToWipe = append(opts.SystemLabelsToWipe, p.GetLabel())
		}
	}

	if len(req.GetSystemPartitionsToWipe()) > 0 && len(opts.SystemLabelsToWipe) == 0 {
		// An empty list means "wipe both"; a list marking none must not.
		return nil, status.Error(codes.InvalidArgument, "reset: the partitions listed are all marked wipe: false; nothing to wipe")
	}

	actor := m.afterReply(ctx, "reset", func(ctx context.Context) error { return m.node.Reset(ctx, opts) })

	return &machine.ResetResponse{Messages: []*machine.Reset{{ActorId: actor}}}, nil
}
