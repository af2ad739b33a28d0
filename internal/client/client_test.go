package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/client/clienttest"
)

func fakeNodes(names ...string) *clienttest.Server {
	s := &clienttest.Server{Self: names[0], Nodes: map[string]*clienttest.Node{}}
	for _, n := range names {
		s.Nodes[n] = &clienttest.Node{Name: n, Version: &machine.VersionInfo{Tag: "v1-" + n}}
	}

	return s
}

func newClient(t *testing.T, p *clienttest.PKI, endpoints ...string) *client.Client {
	t.Helper()

	c, err := client.New(client.Options{Endpoints: endpoints, CA: p.CA.Crt, Crt: p.Client.Crt, Key: p.Client.Key, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() })

	return c
}

// refusedAddr is a 127.0.0.1 port nothing listens on: it is bound, then
// closed, so connecting to it is refused at once.
func refusedAddr(t *testing.T) string {
	t.Helper()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	addr := ln.Addr().String()
	ln.Close()

	return addr
}

func TestFailoverToWorkingEndpoint(t *testing.T) {
	p := clienttest.NewPKI(t)
	addr := clienttest.Start(t, p, fakeNodes("10.0.0.2"), false)

	c := newClient(t, p, refusedAddr(t), addr)

	resp, err := c.Machine.Version(context.Background(), &emptypb.Empty{})
	if err != nil {
		t.Fatalf("Version through the second endpoint: %v", err)
	}

	if got := resp.GetMessages()[0].GetVersion().GetTag(); got != "v1-10.0.0.2" {
		t.Fatalf("tag %q", got)
	}
}

func TestAllEndpointsDown(t *testing.T) {
	p := clienttest.NewPKI(t)
	c := newClient(t, p, refusedAddr(t), refusedAddr(t))

	_, err := c.Machine.Version(context.Background(), &emptypb.Empty{})
	if err == nil || !strings.Contains(client.Message(err), "connection refused") {
		t.Fatalf("error %v, want connection refused", err)
	}
}

func TestServerVerifiedAgainstCA(t *testing.T) {
	ours, theirs := clienttest.NewPKI(t), clienttest.NewPKI(t)
	addr := clienttest.Start(t, theirs, fakeNodes("n"), false)

	// Our CA does not sign their server certificate: refused, and the
	// error says why.
	c := newClient(t, ours, addr)

	_, err := c.Machine.Version(context.Background(), &emptypb.Empty{})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("error %v, want a certificate error", err)
	}
}

func TestServerNameIsDialledIP(t *testing.T) {
	p := clienttest.NewPKI(t)
	addr := clienttest.Start(t, p, fakeNodes("n"), false)
	_, port, _ := net.SplitHostPort(addr)

	// "localhost" reaches the server, but its certificate names 127.0.0.1
	// only: the dialled name must be in the SANs.
	c := newClient(t, p, "localhost:"+port)

	_, err := c.Machine.Version(context.Background(), &emptypb.Empty{})
	if err == nil || !strings.Contains(err.Error(), "localhost") {
		t.Fatalf("error %v, want a name mismatch for localhost", err)
	}
}

func TestInsecureMaintenance(t *testing.T) {
	p := clienttest.NewPKI(t)
	addr := clienttest.Start(t, p, fakeNodes("n"), true)

	c, err := client.New(client.Options{Endpoints: []string{addr}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Machine.Version(context.Background(), &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
}

func TestFanOutOrderAndErrors(t *testing.T) {
	p := clienttest.NewPKI(t)
	srv := fakeNodes("10.0.0.2", "10.0.0.3")
	c := newClient(t, p, clienttest.Start(t, p, srv, false))

	nodes := []string{"10.0.0.3", "10.0.0.9", "10.0.0.2"}

	results := client.FanOut(context.Background(), nodes, func(ctx context.Context, _ string) (string, error) {
		resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
		if err != nil {
			return "", err
		}

		return resp.GetMessages()[0].GetVersion().GetTag(), nil
	})

	for i, want := range []string{"v1-10.0.0.3", "", "v1-10.0.0.2"} {
		if results[i].Node != nodes[i] || results[i].Value != want {
			t.Errorf("result %d = %+v, want node %s value %q", i, results[i], nodes[i], want)
		}
	}

	err := client.Errors(results)

	var ne *client.NodeError
	if !errors.As(err, &ne) || ne.Node != "10.0.0.9" {
		t.Fatalf("Errors = %v, want a NodeError for 10.0.0.9", err)
	}

	if got := err.Error(); !strings.HasPrefix(got, "error on node 10.0.0.9: connection error:") {
		t.Fatalf("message %q: want the gRPC prefix stripped", got)
	}
}

func TestFanOutWithoutNodesCallsEndpoint(t *testing.T) {
	p := clienttest.NewPKI(t)
	srv := fakeNodes("self")
	c := newClient(t, p, clienttest.Start(t, p, srv, false))

	results := client.FanOut(context.Background(), nil, func(ctx context.Context, _ string) (*machine.VersionResponse, error) {
		return c.Machine.Version(ctx, &emptypb.Empty{})
	})

	if len(results) != 1 || results[0].Node != "" || results[0].Err != nil {
		t.Fatalf("results %+v", results)
	}

	srv.Locked(func() {
		if len(srv.SeenNodes) != 1 || srv.SeenNodes[0] != "self" {
			t.Fatalf("seen nodes %v", srv.SeenNodes)
		}
	})
}

func TestWithNodeReplaces(t *testing.T) {
	ctx := client.WithNode(client.WithNode(context.Background(), "a"), "b")
	p := clienttest.NewPKI(t)
	srv := fakeNodes("a", "b")
	c := newClient(t, p, clienttest.Start(t, p, srv, false))

	resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	if got := resp.GetMessages()[0].GetMetadata().GetHostname(); got != "b" {
		t.Fatalf("answered by %q, want b", got)
	}
}

func TestNormalizeEndpoint(t *testing.T) {
	tests := []struct{ in, hostport, host, err string }{
		{"10.0.0.2", "10.0.0.2:50000", "10.0.0.2", ""},
		{"10.0.0.2:6000", "10.0.0.2:6000", "10.0.0.2", ""},
		{"node.example.com", "node.example.com:50000", "node.example.com", ""},
		{"https://10.0.0.2:50000/", "10.0.0.2:50000", "10.0.0.2", ""},
		{"fd00::2", "[fd00::2]:50000", "fd00::2", ""},
		{"[fd00::2]:7", "[fd00::2]:7", "fd00::2", ""},
		{"[fd00::2]", "[fd00::2]:50000", "fd00::2", ""},
		{"", "", "", "empty"},
		{"host:port", "", "", "invalid port"},
		{"host:99999", "", "", "invalid port"},
		{"a:b:c", "", "", "expected host or host:port"},
	}

	for _, tt := range tests {
		hp, h, err := client.NormalizeEndpoint(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}

			continue
		}

		if err != nil || hp != tt.hostport || h != tt.host {
			t.Errorf("%q = %q, %q, %v; want %q, %q", tt.in, hp, h, err, tt.hostport, tt.host)
		}
	}
}

func TestMissingCredentials(t *testing.T) {
	_, err := client.New(client.Options{Endpoints: []string{"10.0.0.2"}})
	if err == nil || !strings.Contains(err.Error(), "ca, crt and key") {
		t.Fatalf("error %v", err)
	}

	if _, err := client.New(client.Options{}); err == nil {
		t.Fatal("no endpoints accepted")
	}
}
