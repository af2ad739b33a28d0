package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/pki"
)

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

// hostnameOf asks whoever ctx routes to for its name.
func hostnameOf(ctx context.Context, c *client.Client) (string, error) {
	resp, err := c.Machine.Hostname(ctx, &emptypb.Empty{})
	if err != nil {
		return "", err
	}

	return resp.GetMessages()[0].GetHostname(), nil
}

// TestRealNodes runs the tests that need a node against two real ones:
// node-1 on 127.0.0.1 and node-2 on 127.0.0.2, one cluster.
func TestRealNodes(t *testing.T) {
	n1 := startNode(t, "127.0.0.1", "node-1", true)
	n2 := startNode(t, "127.0.0.2", "node-2", true)

	// Another cluster's client certificate: the node's refusal is told as
	// such every time, never as gRPC's "write: broken pipe".
	t.Run("a foreign client certificate", func(t *testing.T) {
		ca, _ := adminCredentials(t)

		other, err := pki.NewCA(pki.CAOptions{Organization: "talos", CommonName: "other"})
		if err != nil {
			t.Fatal(err)
		}

		foreign, err := pki.NewClientCertificate(other, pki.ClientOptions{Roles: []string{"os:admin"}})
		if err != nil {
			t.Fatal(err)
		}

		for range 20 {
			c, err := client.New(client.Options{Endpoints: []string{n1.addr}, CA: ca, Crt: foreign.Crt, Key: foreign.Key, DialTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}

			_, err = c.Machine.Version(context.Background(), &emptypb.Empty{})
			c.Close()

			if msg := client.Message(err); !strings.Contains(msg, "the node refused this client's certificate (tls: unknown certificate authority)") {
				t.Fatalf("a foreign certificate: %s", msg)
			}
		}
	})

	t.Run("failover to a working endpoint", func(t *testing.T) {
		c := newClient(t, refusedAddr(t), n1.addr)

		resp, err := c.Machine.Version(context.Background(), &emptypb.Empty{})
		if err != nil {
			t.Fatalf("Version through the second endpoint: %v", err)
		}

		if v := resp.GetMessages()[0]; v.GetVersion().GetTag() == "" || v.GetMaintenance() {
			t.Fatalf("version %v", v)
		}

		if got, err := hostnameOf(context.Background(), c); err != nil || got != "node-1" {
			t.Fatalf("answered by %q, %v", got, err)
		}
	})

	t.Run("server verified against the CA", func(t *testing.T) {
		// Another cluster's credentials: their CA did not sign our
		// server's certificate; refused, and the error says why.
		other, err := pki.NewBundle(pki.BundleOptions{})
		if err != nil {
			t.Fatal(err)
		}

		crt, err := pki.NewClientCertificate(&other.Certs.OS, pki.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}

		c, err := client.New(client.Options{Endpoints: []string{n1.addr}, CA: other.Certs.OS.Crt, Crt: crt.Crt, Key: crt.Key})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		_, err = c.Machine.Version(context.Background(), &emptypb.Empty{})
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Fatalf("error %v, want a certificate error", err)
		}
	})

	t.Run("fan-out order and errors", func(t *testing.T) {
		c := newClient(t, n1.addr)

		// Through node-1's apid: node-2, a node nobody answers for, node-1.
		nodes := []string{n2.addr, refusedAddr(t), n1.addr}

		results := client.FanOut(context.Background(), nodes, func(ctx context.Context, _ string) (string, error) {
			return hostnameOf(ctx, c)
		})

		for i, want := range []string{"node-2", "", "node-1"} {
			if results[i].Node != nodes[i] || results[i].Value != want || (want == "") != (results[i].Err != nil) {
				t.Errorf("result %d = %+v, want node %s value %q", i, results[i], nodes[i], want)
			}
		}

		err := client.Errors(results)

		var ne *client.NodeError
		if !errors.As(err, &ne) || ne.Node != nodes[1] {
			t.Fatalf("Errors = %v, want a NodeError for %s", err, nodes[1])
		}

		if got := err.Error(); !strings.HasPrefix(got, "error on node "+nodes[1]+": ") || strings.Contains(got, "rpc error") || !strings.Contains(got, "connection refused") {
			t.Fatalf("message %q: want the node, the cause, and no gRPC prefix", got)
		}
	})

	t.Run("fan-out without nodes calls the endpoint", func(t *testing.T) {
		c := newClient(t, n2.addr)

		results := client.FanOut(context.Background(), nil, func(ctx context.Context, _ string) (string, error) {
			return hostnameOf(ctx, c)
		})

		if len(results) != 1 || results[0].Node != "" || results[0].Err != nil || results[0].Value != "node-2" {
			t.Fatalf("results %+v", results)
		}
	})

	t.Run("WithNode replaces", func(t *testing.T) {
		c := newClient(t, n1.addr)

		got, err := hostnameOf(client.WithNode(client.WithNode(context.Background(), "127.0.0.9"), n2.addr), c)
		if err != nil || got != "node-2" {
			t.Fatalf("answered by %q, %v; want node-2", got, err)
		}

		got, err = hostnameOf(client.WithoutNode(client.WithNode(context.Background(), n2.addr)), c)
		if err != nil || got != "node-1" {
			t.Fatalf("WithoutNode: answered by %q, %v; want the endpoint, node-1", got, err)
		}
	})
}

func TestAllEndpointsDown(t *testing.T) {
	ca, crt := adminCredentials(t)

	c, err := client.New(client.Options{Endpoints: []string{refusedAddr(t), refusedAddr(t)}, CA: ca, Crt: crt.Crt, Key: crt.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	_, err = c.Machine.Version(context.Background(), &emptypb.Empty{})
	if err == nil || !strings.Contains(client.Message(err), "connection refused") {
		t.Fatalf("error %v, want connection refused", err)
	}
}

// TestServerNameIsDialledIP: a real TLS server whose certificate names
// 127.0.0.1 only. "localhost" reaches it, but the dialled name must be in
// the certificate's SANs. (apid's own certificates always name localhost,
// so a bare listener is what can show this.)
func TestServerNameIsDialledIP(t *testing.T) {
	b, err := secrets()
	if err != nil {
		t.Fatal(err)
	}

	pair, err := pki.NewServerCertificate(&b.Certs.OS, pki.ServerOptions{CommonName: "n", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}

	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}

			go func() {
				defer conn.Close()

				conn.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck // best effort
				conn.(*tls.Conn).Handshake()                       //nolint:errcheck,forcetypeassert // the client decides
				conn.Read(make([]byte, 1))                         //nolint:errcheck // until the client hangs up
			}()
		}
	}()

	_, port, _ := net.SplitHostPort(ln.Addr().String())
	c := newClient(t, "localhost:"+port)

	_, err = c.Machine.Version(context.Background(), &emptypb.Empty{})
	if err == nil || !strings.Contains(err.Error(), "localhost") || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("error %v, want a name mismatch for localhost", err)
	}
}

func TestInsecureMaintenance(t *testing.T) {
	n := startNode(t, "127.0.0.1", "waiting", false)

	c, err := client.New(client.Options{Endpoints: []string{n.addr}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	resp, err := c.Machine.Version(context.Background(), &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	if !resp.GetMessages()[0].GetMaintenance() {
		t.Fatalf("version %v: not in maintenance", resp.GetMessages()[0])
	}

	// The cluster's credentials do not reach a node without a config: it
	// has no certificate from the cluster's CA yet.
	if _, err := newClient(t, n.addr).Machine.Version(context.Background(), &emptypb.Empty{}); err == nil {
		t.Fatal("mutual TLS against a node in maintenance mode succeeded")
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
