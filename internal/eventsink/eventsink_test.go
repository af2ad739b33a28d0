package eventsink_test

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/api/common"
	apievents "github.com/talosbox/talosbox/internal/api/events"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/eventsink"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// TestPayload: each event of the node's stream is the Talos message of
// its type; talosbox's own have none.
func TestPayload(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name string
		ev   events.Event
		want proto.Message
	}{
		{
			name: "a sequence starts",
			ev:   events.Event{Type: events.TypeSequence, Fields: map[string]string{"sequence": "boot", "action": "start"}},
			want: &machine.SequenceEvent{Sequence: "boot", Action: machine.SequenceEvent_START},
		},
		{
			name: "a sequence fails",
			ev:   events.Event{Type: events.TypeSequence, Fields: map[string]string{"sequence": "boot", "action": "fail", "error": "phase x: task y: boom"}},
			want: &machine.SequenceEvent{Sequence: "boot", Action: machine.SequenceEvent_STOP, Error: &common.Error{Code: common.Code_FATAL, Message: "phase x: task y: boom"}},
		},
		{
			name: "a phase stops",
			ev:   events.Event{Type: events.TypePhase, Fields: map[string]string{"phase": "startEverything", "action": "stop"}},
			want: &machine.PhaseEvent{Phase: "startEverything", Action: machine.PhaseEvent_STOP},
		},
		{
			name: "a task starts",
			ev:   events.Event{Type: events.TypeTask, Fields: map[string]string{"task": "startAllServices", "action": "start"}},
			want: &machine.TaskEvent{Task: "startAllServices", Action: machine.TaskEvent_START},
		},
		{
			name: "a service runs",
			ev:   events.Event{Type: events.TypeServiceState, Message: "Health check successful", Fields: map[string]string{"service": "etcd", "state": "Running"}},
			want: &machine.ServiceStateEvent{Service: "etcd", Action: machine.ServiceStateEvent_RUNNING, Message: "Health check successful"},
		},
		{
			name: "a config is refused",
			ev:   events.Event{Type: events.TypeConfigLoadError, Message: "line 3: bad"},
			want: &machine.ConfigLoadErrorEvent{Error: "line 3: bad"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			got, err := eventsink.Payload(tc.ev)
			if err != nil || !proto.Equal(got, tc.want) {
				t.Errorf("got %v, %v\nwant %v", got, err, tc.want)
			}
		})
	}

	if _, err := eventsink.Payload(events.Event{ID: "x", Type: events.TypeDropped}); err == nil {
		t.Error("EventsDropped has a Talos message")
	}

	if _, err := eventsink.Payload(events.Event{ID: "x", Type: events.TypeServiceState, Fields: map[string]string{"state": "Dancing"}}); err == nil {
		t.Error("an unknown service state was published")
	}
}

// sink is an EventSinkService in the test: it hands over what it gets,
// and refuses while down is set.
type sink struct {
	apievents.UnimplementedEventSinkServiceServer

	got     chan *apievents.EventRequest
	down    chan bool // one value: refusing or not
	refused chan string
	addr    string
}

func (s *sink) Publish(_ context.Context, req *apievents.EventRequest) (*apievents.EventResponse, error) {
	down := <-s.down
	s.down <- down

	if down {
		select {
		case s.refused <- req.GetId():
		default:
		}

		return nil, status.Error(codes.Unavailable, "the sink is down")
	}

	s.got <- req

	return &apievents.EventResponse{}, nil
}

func (s *sink) setDown(v bool) { <-s.down; s.down <- v }

func startSink(t *testing.T) *sink {
	t.Helper()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	s := &sink{got: make(chan *apievents.EventRequest, 4096), down: make(chan bool, 1), refused: make(chan string, 1), addr: l.Addr().String()}
	s.down <- false

	srv := grpc.NewServer()
	apievents.RegisterEventSinkServiceServer(srv, s)

	go srv.Serve(l) //nolint:errcheck // ends with Stop

	t.Cleanup(srv.Stop)

	return s
}

// next waits for the next request the sink took.
func (s *sink) next(t *testing.T) *apievents.EventRequest {
	t.Helper()

	select {
	case req := <-s.got:
		return req
	case <-time.After(30 * time.Second):
		t.Fatal("the sink got nothing")
	}

	return nil
}

// want checks a request is the event, as Talos packs it.
func want(t *testing.T, req *apievents.EventRequest, ev events.Event, msg proto.Message) {
	t.Helper()

	if req.GetId() != ev.ID {
		t.Errorf("id %s, want %s", req.GetId(), ev.ID)
	}

	got, err := anypb.UnmarshalNew(req.GetData(), proto.UnmarshalOptions{})
	if err != nil || !proto.Equal(got, msg) {
		t.Errorf("data %v (%v), want %v", got, err, msg)
	}

	if tu := req.GetData().GetTypeUrl(); tu != "type.googleapis.com/"+string(msg.ProtoReflect().Descriptor().FullName()) {
		t.Errorf("type URL %s", tu)
	}
}

// logHook hands the controller's log messages to a channel.
type logHook chan string

func (logHook) Enabled(context.Context, slog.Level) bool { return true }

func (h logHook) Handle(_ context.Context, r slog.Record) error {
	select {
	case h <- r.Message:
	default:
	}

	return nil
}

func (h logHook) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logHook) WithGroup(string) slog.Handler      { return h }

// awaitLog waits for the controller to log msg.
func awaitLog(t *testing.T, logs logHook, msg string) {
	t.Helper()

	deadline := time.After(30 * time.Second)

	for {
		select {
		case m := <-logs:
			if m == msg {
				return
			}
		case <-deadline:
			t.Fatalf("the controller never logged %q", msg)
		}
	}
}

func startController(t *testing.T, ring *events.Ring, logs logHook) *bus.Store {
	t.Helper()

	store := bus.NewStore(bus.StoreOptions{})
	rt := bus.NewRuntime(store, bus.RuntimeOptions{Logger: slog.New(logs)})

	if err := rt.Register(&eventsink.Controller{Events: ring}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck // ends with the test
	}()

	t.Cleanup(func() { cancel(); <-done })

	return store
}

func configure(t *testing.T, store *bus.Store, endpoint string) {
	t.Helper()

	var docs []configs.Document
	if endpoint != "" {
		docs = append(docs, &configs.EventSinkConfig{Endpoint: endpoint})
	}

	cfg := configs.NewConfig(nil, docs...)

	mc := bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg})
	if _, err := store.Modify(context.Background(), mc, func(res bus.Resource) error {
		res.(*config.MachineConfig).TypedSpec().Config = cfg
		return nil
	}, bus.WithOwner("machined")); err != nil {
		t.Fatal(err)
	}
}

// TestController: a real gRPC sink gets the events published before it
// was configured and after, in order, as Talos's messages; what a sink
// refuses is published again when it takes events again; a new endpoint
// gets what follows.
func TestController(t *testing.T) {
	t.Parallel()

	ring := events.New(0)
	boot := ring.Publish(events.TypeSequence, "sequence boot: start", map[string]string{"sequence": "boot", "action": "start"})
	ring.Publish(events.TypeDropped, "talosbox's own", nil)

	s := startSink(t)
	logs := make(logHook, 256)
	store := startController(t, ring, logs)
	configure(t, store, s.addr)

	want(t, s.next(t), boot, &machine.SequenceEvent{Sequence: "boot", Action: machine.SequenceEvent_START})

	svc := ring.Publish(events.TypeServiceState, "Started", map[string]string{"service": "apid", "state": "Running"})
	want(t, s.next(t), svc, &machine.ServiceStateEvent{Service: "apid", Action: machine.ServiceStateEvent_RUNNING, Message: "Started"})

	// Down: the next two events wait, and arrive in order once it is up.
	s.setDown(true)

	held := []events.Event{
		ring.Publish(events.TypeTask, "task x: start", map[string]string{"task": "x", "action": "start"}),
		ring.Publish(events.TypeTask, "task x: stop", map[string]string{"task": "x", "action": "stop"}),
	}

	// Once the sink refused the first, it takes events again.
	select {
	case id := <-s.refused:
		if id != held[0].ID {
			t.Errorf("the sink refused %s first, want %s", id, held[0].ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the controller never tried the sink while it was down")
	}

	s.setDown(false)

	want(t, s.next(t), held[0], &machine.TaskEvent{Task: "x", Action: machine.TaskEvent_START})
	want(t, s.next(t), held[1], &machine.TaskEvent{Task: "x", Action: machine.TaskEvent_STOP})

	// Another sink: what follows the switch goes there, the first gets
	// nothing more.
	s2 := startSink(t)
	configure(t, store, s2.addr)
	awaitLog(t, logs, "event sink: publishing to "+s2.addr)

	errEv := ring.Publish(events.TypeConfigLoadError, "line 1: bad", nil)
	want(t, s2.next(t), errEv, &machine.ConfigLoadErrorEvent{Error: "line 1: bad"})

	select {
	case req := <-s.got:
		t.Errorf("the old sink got %v", req)
	default:
	}
}
