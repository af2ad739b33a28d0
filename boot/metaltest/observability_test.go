//go:build e2e

package metaltest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	apievents "github.com/talosbox/talosbox/internal/api/events"
	"github.com/talosbox/talosbox/internal/api/machine"
)

// watchdogTimeout is the shortest Talos allows: the node must feed its
// watchdog (softdog, which resets the guest when starved) several times
// while the test looks.
const watchdogTimeout = 10 * time.Second

// observed is what observability set up, for check.
type observed struct {
	n     *node
	cp    string
	kmsg  *kmsgEndpoint
	sink  *eventSink
	armed time.Time
}

// observability applies, live, a KmsgLogConfig and an EventSinkConfig
// pointing at this test (the guest reaches the host at 10.0.2.2) and a
// WatchdogTimerConfig on softdog; check (called after other steps, so
// that the watchdog's timeouts pass meanwhile) sees the test's TCP
// endpoint get the guest's kernel log from its first record, in Talos's
// json_lines format, its gRPC sink get the node's events as Talos's
// messages, and the watchdog armed with the timeout and fed past two of
// them. Applying cp again removes the documents, and the watchdog is
// stopped (magic close).
func (n *node) observability(cp string) *observed {
	n.t.Helper()

	o := &observed{n: n, cp: cp, kmsg: startKmsgEndpoint(n), sink: startEventSink(n)}

	base, err := os.ReadFile(cp)
	if err != nil {
		n.t.Fatal(err)
	}

	obs := filepath.Join(filepath.Dir(cp), "observability.yaml")
	docs := fmt.Sprintf("apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: test\nurl: tcp://10.0.2.2:%d/\n---\n"+
		"apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: 10.0.2.2:%d\n---\n"+
		"apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: %s\n", o.kmsg.port, o.sink.port, watchdogTimeout)

	if err := os.WriteFile(obs, append(base, []byte("---\n"+docs)...), 0o600); err != nil {
		n.t.Fatal(err)
	}

	n.ok("apply-config", "--mode", "no-reboot", "-f", obs)
	o.armed = time.Now()

	return o
}

// check is observability's second half.
func (o *observed) check() {
	n := o.n
	n.t.Helper()

	kmsg, sink, armed, cp := o.kmsg, o.sink, o.armed, o.cp

	// The kernel log, from its first record on.
	rec := kmsg.await(n, func(r map[string]any) bool { return strings.HasPrefix(fmt.Sprint(r["msg"]), "Linux version ") })
	for _, k := range []string{"facility", "priority", "seq", "clock", "talos-time", "talos-level"} {
		if _, ok := rec[k]; !ok {
			n.t.Errorf("the kernel log record lacks %s: %v", k, rec)
		}
	}

	// The events, from the oldest the node holds: this boot's sequence
	// and its services.
	sink.await(n, &machine.SequenceEvent{Sequence: "boot", Action: machine.SequenceEvent_START})
	sink.await(n, &machine.ServiceStateEvent{Service: "apid", Action: machine.ServiceStateEvent_RUNNING})

	// The watchdog: armed with the timeout, and fed, or softdog resets
	// the guest (QEMU exits, -no-reboot) before two timeouts have passed.
	if got := n.ok("read", "/sys/class/watchdog/watchdog0/timeout"); got != fmt.Sprintf("%d\n", int(watchdogTimeout.Seconds())) {
		n.t.Errorf("watchdog timeout %q", got)
	}

	if out := n.ok("get", "watchdogtimerstatus"); !regexp.MustCompile(`timer\s+\d+\s+/dev/watchdog0\s`).MatchString(out) {
		n.t.Errorf("get watchdogtimerstatus:\n%s", out)
	}

	n.until("the watchdog fed past two timeouts", servicesTimeout, func() error {
		if state := n.ok("read", "/sys/class/watchdog/watchdog0/state"); state != "active\n" {
			return fmt.Errorf("watchdog state %q, want active", state)
		}

		if since := time.Since(armed); since < 2*watchdogTimeout {
			return fmt.Errorf("armed %s ago", since.Round(time.Second))
		}

		return nil
	})

	n.ok("apply-config", "--mode", "no-reboot", "-f", cp)

	n.until("the watchdog stopped", commandTimeout, func() error {
		if state := n.ok("read", "/sys/class/watchdog/watchdog0/state"); state != "inactive\n" {
			return fmt.Errorf("watchdog state %q, want inactive", state)
		}

		return nil
	})

	if strings.Contains(n.console(), "watchdog did not stop") || strings.Contains(n.console(), "softdog: Initiating system reboot") {
		n.t.Errorf("the watchdog was not stopped cleanly:\n%s", n.vm.Tail(30))
	}
}

// kmsgEndpoint is a TCP endpoint for the guest's kernel log.
type kmsgEndpoint struct {
	port    int
	records chan map[string]any
}

func startKmsgEndpoint(n *node) *kmsgEndpoint {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.t.Fatal(err)
	}

	n.t.Cleanup(func() { l.Close() })

	e := &kmsgEndpoint{port: l.Addr().(*net.TCPAddr).Port, records: make(chan map[string]any, 1<<16)}

	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}

			go func() {
				defer c.Close()

				sc := bufio.NewScanner(c)
				sc.Buffer(nil, 1<<20)

				for sc.Scan() {
					var m map[string]any
					if json.Unmarshal(sc.Bytes(), &m) == nil {
						select {
						case e.records <- m:
						default:
						}
					}
				}
			}()
		}
	}()

	return e
}

func (e *kmsgEndpoint) await(n *node, match func(map[string]any) bool) map[string]any {
	n.t.Helper()

	deadline := time.After(servicesTimeout)

	for {
		select {
		case r := <-e.records:
			if match(r) {
				return r
			}
		case <-deadline:
			n.t.Fatalf("no kernel log record came\n%s", n.vm.Tail(30))
		}
	}
}

// eventSink is a gRPC EventSinkService for the node's events.
type eventSink struct {
	apievents.UnimplementedEventSinkServiceServer

	port int
	got  chan proto.Message
	seen []proto.Message // what await has read of got
}

func (s *eventSink) Publish(_ context.Context, req *apievents.EventRequest) (*apievents.EventResponse, error) {
	msg, err := anypb.UnmarshalNew(req.GetData(), proto.UnmarshalOptions{})
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", req.GetId(), err)
	}

	if req.GetId() == "" {
		return nil, errors.New("an event without an ID")
	}

	select {
	case s.got <- msg:
	default:
	}

	return &apievents.EventResponse{}, nil
}

func startEventSink(n *node) *eventSink {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.t.Fatal(err)
	}

	s := &eventSink{port: l.Addr().(*net.TCPAddr).Port, got: make(chan proto.Message, 1<<16)}
	srv := grpc.NewServer()
	apievents.RegisterEventSinkServiceServer(srv, s)

	go srv.Serve(l) //nolint:errcheck // ends with Stop

	n.t.Cleanup(srv.Stop)

	return s
}

// await waits for an event whose message has want's fields (its others,
// such as a service's message, are not compared), among all the sink got
// so far: the events arrive in the node's order, not the test's.
func (s *eventSink) await(n *node, want proto.Message) {
	n.t.Helper()

	deadline := time.After(servicesTimeout)

	for {
		if slices.ContainsFunc(s.seen, func(got proto.Message) bool { return sameEvent(got, want) }) {
			return
		}

		select {
		case got := <-s.got:
			s.seen = append(s.seen, got)
		case <-deadline:
			n.t.Fatalf("the event sink never got %v (it got %d events)\n%s", want, len(s.seen), n.vm.Tail(30))
		}
	}
}

func sameEvent(got, want proto.Message) bool {
	switch w := want.(type) {
	case *machine.SequenceEvent:
		g, ok := got.(*machine.SequenceEvent)
		return ok && g.GetSequence() == w.GetSequence() && g.GetAction() == w.GetAction()
	case *machine.ServiceStateEvent:
		g, ok := got.(*machine.ServiceStateEvent)
		return ok && g.GetService() == w.GetService() && g.GetAction() == w.GetAction()
	}

	return proto.Equal(got, want)
}
