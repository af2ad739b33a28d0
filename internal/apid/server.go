// Package apid is the node API: gRPC on port 50000 with mutual TLS,
// per-method role checks, redaction of secrets for non-admins, and
// forwarding of calls that name another node to that node's apid.
//
// It runs inside machined, on the node's bus: MachineService and
// ResourceService are implemented directly over machine.Node, with no
// second hop over a unix socket as in Talos. The network-facing side is
// bounded instead: message sizes, streams per connection, connections.
//
// The server follows the node. With no config (maintenance mode) it
// serves server-only TLS with a self-signed certificate and a short
// allow-list of methods; once a config is active it restarts with mutual
// TLS from the OS CA (machine.ca). A worker has no CA key: its server
// certificate comes from trustd on the control plane, and until the first
// one arrives it does not serve, and says so.
package apid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/controlplane"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/supervisor"
	"google.golang.org/grpc"
)

// Options configure the server.
type Options struct {
	Node *machine.Node
	// Events is the node's event stream (machined feeds it through
	// machine.Options.OnEvent); an empty one is made when nil.
	Events *events.Ring
	// Listen is the address Run listens on (":50000" when empty).
	Listen string
	// RemotePort is the port of other nodes' apid (DefaultPort when zero).
	RemotePort int
	// NodePorts lets the node metadata name a port ("host:port"), for
	// several nodes in one test process. Off in production: any caller
	// could otherwise make apid dial arbitrary ports.
	NodePorts bool
	// Plane serves the etcd calls and bootstrap; nil on a node without
	// one (they fail with FailedPrecondition).
	Plane *controlplane.Plane
	// TrustdEndpoints, on a worker, replace the control-plane endpoint's
	// host as where the server certificate is asked for (tests).
	TrustdEndpoints []string
	// Hostname overrides the node's name (config, then kernel): two test
	// nodes in one process need different ones.
	Hostname string
	// StopGrace is how long in-flight calls get when the server restarts
	// (mode or trust change) or stops, before streams are cut (5 s).
	StopGrace time.Duration
	// MaxConnections bounds concurrent client connections (512).
	MaxConnections int
	// Listening, when set, follows whether Run's listener is served: the
	// apid service's health.
	Listening *supervisor.Listening
	// Register adds the node's services (MachineService, served by
	// machined's handlers) to each gRPC server apid starts, behind its
	// authentication, authorization and proxying. apid itself serves only
	// ResourceService.
	Register func(*grpc.Server)
	// LocalSocket, when set, is a unix socket Run also serves: the node's
	// own processes (the console dashboard) call it as os:reader, with no
	// certificate. It is made 0600, for root only.
	LocalSocket string
}

// Server is one apid. Serve runs it on a listener.
type Server struct {
	opts   Options
	log    io.Writer
	node   *machine.Node
	events *events.Ring
	remote *remotePool
	certs  *certPublisher

	id      atomic.Pointer[identity]
	ownPort atomic.Value // string: the port Serve listens on

	// genMu guards gen, closed and replaced whenever a server generation
	// starts or stops (WaitServing watches it), and serving, set while
	// one runs.
	genMu   sync.Mutex
	gen     chan struct{}
	serving bool
}

// NewServer prepares a server; it serves nothing until Serve.
func NewServer(opts Options, log io.Writer) (*Server, error) {
	if opts.Node == nil {
		return nil, errors.New("apid: Options.Node is required")
	}

	if log == nil {
		log = io.Discard
	}

	if opts.RemotePort == 0 {
		opts.RemotePort = constants.ApidPort
	}

	if opts.StopGrace == 0 {
		opts.StopGrace = 5 * time.Second
	}

	if opts.MaxConnections == 0 {
		opts.MaxConnections = 512
	}

	s := &Server{opts: opts, log: log, node: opts.Node, events: opts.Events, gen: make(chan struct{})}
	if s.events == nil {
		s.events = events.New(events.DefaultCapacity)
	}

	s.remote = newRemotePool(s.identity)
	s.certs = &certPublisher{store: opts.Node.Store(), log: func(format string, args ...any) { fmt.Fprintf(log, format, args...) }}
	s.ownPort.Store("")

	return s, nil
}

// Run listens on opts.Listen and serves until ctx ends.
func Run(ctx context.Context, opts Options, log io.Writer) error {
	if opts.Listen == "" {
		opts.Listen = ":" + strconv.Itoa(constants.ApidPort)
	}

	s, err := NewServer(opts, log)
	if err != nil {
		return err
	}

	lis, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("apid: %w", err)
	}

	if opts.Listening != nil {
		opts.Listening.Serving(true)
		defer opts.Listening.Serving(false)
	}

	if opts.LocalSocket != "" {
		local, err := listenLocal(opts.LocalSocket)
		if err != nil {
			return err
		}

		go s.ServeLocal(ctx, local) //nolint:errcheck // ends with ctx; the TCP listener is apid's health
	}

	return s.Serve(ctx, lis)
}

// identity is what the server currently serves as (nil before Serve).
func (s *Server) identity() *identity { return s.id.Load() }

// Maintenance reports whether the server currently serves maintenance mode.
func (s *Server) Maintenance() bool {
	id := s.identity()
	return id != nil && id.maintenance
}

// WaitServing returns once a server generation serves in the given mode
// (maintenance or not), or ctx ends. machined and tests use it to know
// when a mode switch has happened.
func (s *Server) WaitServing(ctx context.Context, maintenance bool) error {
	return s.waitState(ctx, func(serving bool, id *identity) bool {
		return serving && id != nil && id.maintenance == maintenance
	})
}

// setServing records whether a generation serves and wakes WaitServing.
func (s *Server) setServing(on bool) {
	s.genMu.Lock()
	s.serving = on
	s.broadcastLocked()
	s.genMu.Unlock()
}

// setIdentity makes id current and wakes the waiters.
func (s *Server) setIdentity(id *identity) {
	s.genMu.Lock()
	s.id.Store(id)
	s.broadcastLocked()
	s.genMu.Unlock()
}

func (s *Server) broadcastLocked() {
	close(s.gen)
	s.gen = make(chan struct{})
}

// Err says why the server does not serve (a worker waiting for trustd),
// or nil.
func (s *Server) Err() error {
	if id := s.identity(); id != nil {
		return id.err
	}

	return nil
}

// waitState returns once cond holds for the server, or ctx ends.
func (s *Server) waitState(ctx context.Context, cond func(serving bool, id *identity) bool) error {
	for {
		s.genMu.Lock()
		next := s.gen
		ok := cond(s.serving, s.identity())
		s.genMu.Unlock()

		if ok {
			return nil
		}

		select {
		case <-next:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// EarlyServices is machine.Options.EarlyServices for a node that serves
// the API: apid starts with machined, before there is a config, so that
// maintenance mode is served. listen is "" for ":50000"; register adds
// the node's MachineService.
func EarlyServices(ring *events.Ring, listen string, plane *controlplane.Plane, register Registrar) func(*machine.Node) []supervisor.Service {
	return func(n *machine.Node) []supervisor.Service {
		listening := &supervisor.Listening{}
		opts := Options{Node: n, Events: ring, Listen: listen, Plane: plane, Listening: listening}

		if n.Platform().IsMetal() {
			opts.LocalSocket = constants.ApidLocalSocket
		}

		return []supervisor.Service{{
			ID:     "apid",
			Health: listening.Check(),
			Runner: supervisor.GoroutineRunner(func(ctx context.Context, w io.Writer) error {
				opts := opts
				if register != nil {
					opts.Register = register(n, w)
				}

				return Run(ctx, opts, w)
			}),
		}}
	}
}

// Registrar makes Options.Register for a node, given the log the apid
// service writes to.
type Registrar func(n *machine.Node, log io.Writer) func(*grpc.Server)
