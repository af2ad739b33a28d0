package k8s

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// namedServer is an upstream that says its name to every connection and
// then echoes what it reads, until it is closed.
type namedServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startNamed(tb testing.TB, name string) *namedServer {
	tb.Helper()

	return startNamedAt(tb, "127.0.0.1:0", name)
}

// startNamedAt is startNamed on a given address.
func startNamedAt(tb testing.TB, addr, name string) *namedServer {
	tb.Helper()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}

	s := &namedServer{ln: ln, conns: map[net.Conn]struct{}{}}

	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}

			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()

			go func() {
				fmt.Fprintf(c, "%s\n", name)
				io.Copy(c, c) //nolint:errcheck // until either side closes
				c.Close()

				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}()
		}
	}()

	tb.Cleanup(s.close)

	return s
}

func (s *namedServer) addr() string { return s.ln.Addr().String() }

// close stops listening and drops the connections it has.
func (s *namedServer) close() {
	s.ln.Close()

	s.mu.Lock()
	defer s.mu.Unlock()

	for c := range s.conns {
		c.Close()
	}
}

// hello connects to addr and returns the name the upstream says, and
// the connection, already checked to echo.
func hello(t *testing.T, addr string) (string, net.Conn) {
	t.Helper()

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck // a net.TCPConn

	r := bufio.NewReader(c)

	name, err := r.ReadString('\n')
	if err != nil {
		return "", c
	}

	fmt.Fprintf(c, "ping\n")

	if echo, err := r.ReadString('\n'); err != nil || echo != "ping\n" {
		t.Fatalf("echo through kubeprism: %q, %v", echo, err)
	}

	return strings.TrimSpace(name), c
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	addr := ln.Addr().String()
	ln.Close()

	return addr
}

func servePrism(t *testing.T, p *Prism) (string, context.CancelFunc) {
	t.Helper()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	go func() { done <- p.Serve(ctx, ln) }()

	t.Cleanup(func() {
		cancel()

		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})

	return ln.Addr().String(), cancel
}

func TestPrismPicksAndFallsBack(t *testing.T) {
	local, endpoint := startNamed(t, "local"), startNamed(t, "endpoint")
	down := closedAddr(t)

	for _, tc := range []struct {
		name      string
		upstreams []string
		check     bool
		want      string
	}{
		{"the first, the node's own, when both answer", []string{local.addr(), endpoint.addr()}, false, "local"},
		{"the next when the first refuses", []string{down, endpoint.addr()}, false, "endpoint"},
		{"the next when the first refuses, after a check", []string{down, endpoint.addr()}, true, "endpoint"},
		{"the order given when all answer, after a check", []string{endpoint.addr(), local.addr()}, true, "endpoint"},
		{"none when none answers", []string{down}, false, ""},
		{"none without upstreams", nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Prism{}
			p.SetUpstreams(tc.upstreams)

			if tc.check {
				if got, want := p.Check(context.Background()), tc.want != ""; got != want {
					t.Errorf("Check = %v, want %v", got, want)
				}
			}

			addr, _ := servePrism(t, p)

			if got, _ := hello(t, addr); got != tc.want {
				t.Errorf("connected to %q, want %q", got, tc.want)
			}
		})
	}
}

// A client whose API server goes away must see its connection end, so
// that it reconnects, and reaches the other one.
func TestPrismEndsClientsWithTheirUpstream(t *testing.T) {
	local, endpoint := startNamed(t, "local"), startNamed(t, "endpoint")

	p := &Prism{}
	p.SetUpstreams([]string{local.addr(), endpoint.addr()})
	addr, stop := servePrism(t, p)

	name, c := hello(t, addr)
	if name != "local" {
		t.Fatalf("connected to %q, want local", name)
	}

	local.close()

	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the upstream closed: %v, want EOF", err)
	}

	name, c = hello(t, addr)
	if name != "endpoint" {
		t.Fatalf("reconnected to %q, want endpoint", name)
	}

	// Serve's end closes the connections it made.
	stop()

	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection outlived Serve")
	}
}

func TestKubePrismController(t *testing.T) {
	local, endpoint := startNamed(t, "local"), startNamed(t, "endpoint")
	port := closedAddr(t)
	_, portS, _ := net.SplitHostPort(port)

	cp, _ := generated(t)
	_, localPort, _ := net.SplitHostPort(local.addr())

	cp = cp.Edit(func(v1 *configs.Config) {
		v1.Cluster.ControlPlane.Endpoint = "https://" + endpoint.addr()
		fmt.Sscan(localPort, &v1.Cluster.ControlPlane.LocalAPIServerPort) //nolint:errcheck // a port
		fmt.Sscan(portS, &v1.Machine.Features.KubePrism.Port)             //nolint:errcheck // a port
	})

	// Another control plane, on another loopback address and its own API
	// server port, as discovery lists it. A record from an earlier version
	// (no port) is taken to use this node's; a worker's address is no
	// upstream.
	peer := startNamedAt(t, "127.0.0.2:0", "peer")
	_, peerPortS, _ := net.SplitHostPort(peer.addr())
	peerPort, _ := strconv.Atoi(peerPortS)

	g := startGraphOf(t, t.TempDir(), &KubePrismController{Interval: 50 * time.Millisecond, Probe: dialProbe})
	g.setConfig(cp)

	for name, m := range map[string]cluster.MemberSpec{
		"cp2": {MachineType: "controlplane", Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.2")},
			ControlPlane: &cluster.ControlPlane{APIServerPort: peerPort}},
		"cp3": {MachineType: "controlplane", Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.4")}},
		"w1":  {MachineType: "worker", Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.3")}},
	} {
		put(g, bus.NewTyped(cluster.Namespace, cluster.MemberType, name, m), "cluster.DiscoveryController")
	}

	status := func() (k8s.KubePrismStatusSpec, bool) {
		s, err := bus.GetAs[*k8s.KubePrismStatus](context.Background(), g.store, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.KubePrismStatusType, ID: k8s.KubePrismID})
		if err != nil {
			return k8s.KubePrismStatusSpec{}, false
		}

		return *s.TypedSpec(), true
	}

	g.wait("kubeprism healthy", func() bool { s, ok := status(); return ok && s.Healthy })

	if s, _ := status(); s.Host != "localhost:"+portS || s.Error != "" {
		t.Errorf("status %+v", s)
	}

	// The members come in after the config: the list grows to them.
	want := []string{local.addr(), endpoint.addr(), peer.addr(), net.JoinHostPort("127.0.0.4", localPort)}

	var got []string

	g.wait("the endpoints: the node's own API server, the endpoint, the other control plane", func() bool {
		eps, err := bus.GetAs[*k8s.KubePrismEndpoints](context.Background(), g.store, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.KubePrismEndpointsType, ID: k8s.KubePrismID})
		if err != nil {
			return false
		}

		got = got[:0]
		for _, e := range eps.TypedSpec().Endpoints {
			got = append(got, net.JoinHostPort(e.Host, fmt.Sprint(e.Port)))
		}

		return slices.Equal(got, want)
	})

	if name, _ := hello(t, port); name != "local" {
		t.Errorf("through kubeprism: %q, want the node's own API server", name)
	}

	local.close()

	if name, _ := hello(t, port); name != "endpoint" {
		t.Errorf("through kubeprism with the local API server down: %q, want the endpoint", name)
	}

	endpoint.close()

	if name, _ := hello(t, port); name != "peer" {
		t.Errorf("through kubeprism with the endpoint down too: %q, want the other control plane", name)
	}

	peer.close()
	g.wait("kubeprism unhealthy with no API server", func() bool { s, ok := status(); return ok && !s.Healthy })

	// A new config, as machined would apply: the bus's is being read.
	off := false
	cp = reDecode(t, cp).Edit(func(v1 *configs.Config) { v1.Machine.Features.KubePrism.Enabled = &off })
	g.setConfig(cp)
	g.wait("kubeprism's status gone when it is turned off", func() bool { _, ok := status(); return !ok })

	if c, err := net.DialTimeout("tcp", port, time.Second); err == nil {
		c.Close()
		t.Error("kubeprism still listens once turned off")
	}
}

// The kubelet goes through KubePrism when it is on; without it, control
// planes use their own API server and workers the endpoint.
func TestKubeletServer(t *testing.T) {
	cp, worker := generated(t)
	off := false

	for _, tc := range []struct {
		name   string
		prism  bool
		worker bool
		want   string
	}{
		{"control plane, kubeprism", true, false, "https://127.0.0.1:7445"},
		{"worker, kubeprism", true, true, "https://127.0.0.1:7445"},
		{"control plane, no kubeprism", false, false, "https://localhost:6443"},
		{"worker, no kubeprism", false, true, "https://10.5.0.2:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := reDecode(t, cp)
			if tc.worker {
				cfg = reDecode(t, worker)
			}

			if !tc.prism {
				cfg.Machine.Features.KubePrism.Enabled = &off
			}

			files, err := kubeletFiles(cfg, k8s.KubeletSpecSpec{})
			if err != nil {
				t.Fatal(err)
			}

			i := slices.IndexFunc(files, func(f render.File) bool { return f.Path == constants.KubeletBootstrapPath })
			if i < 0 {
				t.Fatal("no bootstrap kubeconfig")
			}

			if !strings.Contains(string(files[i].Data), "server: "+tc.want+"\n") {
				t.Errorf("bootstrap kubeconfig, want server %s:\n%s", tc.want, files[i].Data)
			}
		})
	}
}

// dialProbe takes an upstream that accepts a connection as serving: the
// named servers speak no HTTP.
func dialProbe(ctx context.Context, up string) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", up)
	if err == nil {
		c.Close()
	}

	return err
}
