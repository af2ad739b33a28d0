package apid

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/events"
	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/machine/server"
	"github.com/talosbox/talosbox/internal/platform"
)

// The wiring machined uses: apid as an early service of the node, fed
// events through OnEvent. A node without config serves maintenance mode.
func TestEarlyServicesWiring(t *testing.T) {
	// A free port for Run to listen on (Run takes an address, not a
	// listener, as machined gives it ":50000").
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	addr := lis.Addr().String()
	lis.Close()

	p, err := platform.Detect(platform.Options{Flag: platform.Container, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}

	ring := events.New(0)
	console := &syncBuffer{}

	node, err := imachine.New(imachine.Options{
		Platform: p, Console: console, NoContainerd: true, StopTimeout: 5 * time.Second,
		EarlyServices: EarlyServices(ring, addr, nil, func(n *imachine.Node, log io.Writer) func(*grpc.Server) {
			return server.Registrar(server.Options{Node: n, Events: ring, Log: log})
		}),
		OnEvent: func(ev imachine.Event) { ring.Publish(ev.Type, ev.Message, ev.Fields) },
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	go func() { done <- node.Run(ctx) }()

	t.Cleanup(func() {
		cancel()

		if err := <-done; err != nil && !errors.Is(err, imachine.ErrPowerOff) {
			t.Errorf("node: %v", err)
		}

		if t.Failed() {
			t.Logf("console:\n%s", console.String())
		}
	})

	// The client waits for the port to serve rather than polling.
	v, err := machineClient(dialInsecure(t, addr)).Version(testCtx(t), &emptypb.Empty{}, grpc.WaitForReady(true))
	if err != nil || !v.GetMessages()[0].GetMaintenance() {
		t.Fatalf("version: %v %v", v, err)
	}

	if st, ok := node.Supervisor().Status("apid"); !ok || st.State.String() != "Running" {
		t.Fatalf("apid service: %+v", st)
	}
}
