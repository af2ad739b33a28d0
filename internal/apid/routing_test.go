package apid

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/role"
)

// nodeB is a second node on 127.0.0.2, its certificate valid for that
// address through machine.certSANs.
func nodeB(t testing.TB) *env {
	t.Helper()

	b := newEnv(t, nodeConfig(t, false, hostname("node-b"), "machine: {certSANs: [127.0.0.2]}"), "127.0.0.2:0")
	b.waitServing(t, false)

	return b
}

func TestRoutingToAnotherNode(t *testing.T) {
	b := nodeB(t)
	ctx := testCtx(t)
	toB := withNode(ctx, b.addr)

	admin := dial(t, shared.addr, clientCert(t, string(role.Admin)))
	mc := machineClient(admin)

	// Unary: B answers and stamps its name.
	v, err := mc.Version(toB, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	if got := v.GetMessages()[0].GetMetadata().GetHostname(); got != "node-b" {
		t.Fatalf("answered by %q", got)
	}

	// Naming the endpoint itself is local.
	for _, self := range []string{shared.addr, "localhost", "node-a", "127.0.0.1"} {
		v, err = mc.Version(withNode(ctx, self), &emptypb.Empty{})
		if err != nil || v.GetMessages()[0].GetMetadata().GetHostname() != "node-a" {
			t.Fatalf("node %q: %v %v", self, v, err)
		}
	}

	// Streams are relayed: B's own log, stamped by B.
	logs, err := mc.Logs(toB, &machine.LogsRequest{Id: "machined", TailLines: -1})
	if err != nil {
		t.Fatal(err)
	}

	var text strings.Builder

	for {
		d, err := logs.Recv()
		if err != nil {
			break
		}

		if d.GetMetadata().GetHostname() != "node-b" {
			t.Fatalf("log chunk from %q", d.GetMetadata().GetHostname())
		}

		text.Write(d.GetBytes())
	}

	if !strings.Contains(text.String(), "apid serving on 127.0.0.2") && !strings.Contains(text.String(), "[talos]") {
		t.Fatalf("B's log:\n%s", text.String())
	}

	// An admin sees B's config; it is B's.
	got, err := resourceClient(admin).Get(toB, &resource.GetRequest{Type: "mc", Id: config.ActiveConfigID})
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(got.GetResource().GetSpecYaml()), "hostname: node-b") || got.GetMetadata().GetHostname() != "node-b" {
		t.Fatalf("B's config through A: %v", got)
	}
}

// A reader stays a reader on the other node: B redacts for it, and what
// the table keeps from readers is refused.
func TestForwardedRolesStay(t *testing.T) {
	b := nodeB(t)
	ctx := testCtx(t)
	toB := withNode(ctx, b.addr)

	reader := dial(t, shared.addr, clientCert(t, string(role.Reader)))

	got, err := resourceClient(reader).Get(toB, &resource.GetRequest{Type: "mc", Id: config.ActiveConfigID})
	if err != nil {
		t.Fatal(err)
	}

	if !got.GetResource().GetRedacted() || got.GetMetadata().GetHostname() != "node-b" {
		t.Fatalf("reader got %v", got)
	}

	_, err = machineClient(reader).ServiceRestart(toB, &machine.ServiceRestartRequest{Id: "machined"})
	wantCode(t, err, codes.PermissionDenied, "os:reader")

	// B itself enforces forwarded roles: an os:impersonator peer gets
	// the roles it forwards, never more, and none without them.
	imp := machineClient(dial(t, b.addr, clientCert(t, string(role.Impersonator))))
	fwd := func(roles ...string) context.Context {
		md := metadata.Pairs(mdProxyFrom, "node-a")
		for _, r := range roles {
			md.Append(mdRole, r)
		}

		return metadata.NewOutgoingContext(ctx, md)
	}

	_, err = imp.ServiceStop(fwd(string(role.Reader)), &machine.ServiceStopRequest{Id: "nope"})
	wantCode(t, err, codes.PermissionDenied, "os:reader")

	_, err = imp.ServiceStop(fwd(), &machine.ServiceStopRequest{Id: "nope"})
	wantCode(t, err, codes.PermissionDenied, "no roles")

	_, err = imp.ServiceStop(fwd(string(role.Impersonator)), &machine.ServiceStopRequest{Id: "nope"})
	wantCode(t, err, codes.PermissionDenied, "no roles")

	_, err = imp.ServiceStop(fwd(string(role.Operator)), &machine.ServiceStopRequest{Id: "nope"})
	wantCode(t, err, codes.NotFound, `"nope"`)

	// Roles in metadata mean nothing from an ordinary client.
	rd := machineClient(dial(t, b.addr, clientCert(t, string(role.Reader))))

	_, err = rd.ServiceStop(fwd(string(role.Admin)), &machine.ServiceStopRequest{Id: "nope"})
	wantCode(t, err, codes.PermissionDenied, "os:reader")
}

func TestRoutingErrors(t *testing.T) {
	ctx := testCtx(t)
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))

	// A node that is down: a closed port on loopback.
	lis, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}

	down := lis.Addr().String()
	lis.Close()

	_, err = mc.Version(withNode(ctx, down), &emptypb.Empty{})
	wantCode(t, err, codes.Unavailable, "apid: node "+down+" is unreachable")

	logs, err := mc.Logs(withNode(ctx, down), &machine.LogsRequest{Id: "machined"})
	if err == nil {
		_, err = logs.Recv()
	}

	wantCode(t, err, codes.Unavailable, down)

	_, err = mc.Version(withNode(ctx, "bad/name"), &emptypb.Empty{})
	wantCode(t, err, codes.InvalidArgument, "bad/name")

	_, err = mc.Version(metadata.AppendToOutgoingContext(ctx, mdNode, "a", mdNode, "b"), &emptypb.Empty{})
	wantCode(t, err, codes.InvalidArgument, "one node per call")

	_, err = mc.Version(metadata.AppendToOutgoingContext(ctx, mdNodes, "a"), &emptypb.Empty{})
	wantCode(t, err, codes.InvalidArgument, "client fans out")

	// Still serving.
	if _, err := mc.Version(ctx, &emptypb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
}

// TestNodePortsOffInProduction: without NodePorts, the node metadata may
// not name a port, so no caller can make apid dial arbitrary ports.
func TestNodePortsOffInProduction(t *testing.T) {
	dir := t.TempDir()

	e, err := startEnv(dir, nodeConfig(t, false), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { e.stop() }) //nolint:errcheck // reported elsewhere

	e.srv.opts.NodePorts = false
	e.waitServing(t, false)

	mc := machineClient(dial(t, e.addr, clientCert(t, string(role.Reader))))

	_, err = mc.Version(withNode(testCtx(t), "10.9.9.9:22"), &emptypb.Empty{})
	wantCode(t, err, codes.InvalidArgument, `apid: node "10.9.9.9:22": nodes are reached on port 50000; name the node without a port`)
}
