package apid

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// errWaiting: no config yet and not in maintenance mode either (booting,
// resetting). Talos starts its maintenance API only once the node is
// waiting for a config, and so does apid.
var errWaiting = errors.New("apid: waiting for the node to load its config or enter maintenance mode")

var (
	stagePtr  = bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStageType, ID: runtime.MachineID}
	configPtr = bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID}
)

// Serve serves on lis until ctx ends, restarting the gRPC server whenever
// the node changes mode or trust; lis is closed when Serve returns.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	if _, port, err := net.SplitHostPort(lis.Addr().String()); err == nil {
		s.ownPort.Store(port)
	}

	acc := newAcceptor(lis, s.opts.MaxConnections)
	defer acc.close()
	defer s.remote.close()

	changed := make(chan struct{}, 1)
	changed <- struct{}{}

	go s.watchNode(ctx, changed)

	var (
		cur      *identity
		gs       *grpc.Server
		served   chan error
		lastNote string
		fetching *certIssuer // a worker's issuer waiting for trustd
	)

	stop := func() {
		if gs == nil {
			return
		}

		s.setServing(false)
		s.stopGraceful(gs)
		<-served
		gs, served = nil, nil
	}
	defer stop()

	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			served = nil // already returned
			gs = nil
			s.setServing(false)

			return fmt.Errorf("apid: serve: %w", err)
		case <-acc.failed:
			return fmt.Errorf("apid: accept: %w", acc.err)
		case <-changed:
		}

		next, err := s.currentIdentity(ctx)
		if err != nil {
			// A config that does not give an identity (no machine.ca):
			// keep serving what we had, and say why.
			fmt.Fprintf(s.log, "[talos] %v\n", err)
			continue
		}

		if next.remote {
			fetching = s.awaitRemoteCert(ctx, cur, next, fetching, changed)
		}

		if cur != nil && next.trustKey == cur.trustKey && next.err == nil && cur.err == nil {
			// Same mode and trust: new names take effect with the next
			// certificate, no need to cut anyone off.
			s.setIdentity(next)
			cur = next

			continue
		}

		stop()
		s.setIdentity(next)
		cur = next

		if next.err != nil {
			if note := next.err.Error(); note != lastNote {
				fmt.Fprintf(s.log, "[talos] %s\n", note)
				lastNote = note
			}

			continue
		}

		lastNote = ""
		gs = s.newGRPCServer(next)
		served = make(chan error, 1)

		go func(gs *grpc.Server, l net.Listener) { served <- gs.Serve(l) }(gs, acc.generation())

		s.setServing(true)

		mode := "mutual TLS"
		if next.maintenance {
			mode = "maintenance mode, server-only TLS"
		}

		fmt.Fprintf(s.log, "[talos] apid serving on %s (%s)\n", lis.Addr(), mode)
	}
}

// awaitRemoteCert prepares a worker's identity: it keeps the certificate
// trustd already issued under the same trust, or else marks the identity
// as waiting and fetches one in the background, signalling changed when
// it arrives. It returns the issuer being fetched.
func (s *Server) awaitRemoteCert(ctx context.Context, cur, next *identity, fetching *certIssuer, changed chan<- struct{}) *certIssuer {
	if cur != nil && cur.remote && cur.trustKey == next.trustKey {
		next.server = cur.server
	}

	if next.server.ready() {
		return fetching
	}

	next.err = errAwaitingCert

	if fetching == next.server {
		return fetching
	}

	go func(ci *certIssuer) {
		if ci.prefetch(ctx, s.log) == nil {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}(next.server)

	return next.server
}

// currentIdentity derives the identity from the node's config and stage.
func (s *Server) currentIdentity(ctx context.Context) (*identity, error) {
	active := s.node.Config()
	if active == nil {
		st, err := bus.GetAs[*runtime.MachineStage](ctx, s.node.Store(), stagePtr)
		if err != nil || st.TypedSpec().Stage != runtime.StageMaintenance {
			return &identity{err: errWaiting, trustKey: "waiting", hostname: machine.HostnameOr(s.opts.Hostname, nil)}, nil
		}
	}

	opts := identityOptions{hostname: s.opts.Hostname, trustdEndpoints: s.opts.TrustdEndpoints}
	if s.opts.Plane != nil {
		opts.controlPlane = s.opts.Plane.TrustdEndpoints
	}

	id, err := newIdentity(active, opts)
	if err == nil {
		s.certs.hook(id)
	}

	return id, err
}

// stopGraceful lets in-flight calls finish for StopGrace, then cuts what
// is left (follow streams never finish on their own).
func (s *Server) stopGraceful(gs *grpc.Server) {
	done := make(chan struct{})

	go func() {
		gs.GracefulStop()
		close(done)
	}()

	t := time.NewTimer(s.opts.StopGrace)
	defer t.Stop()

	select {
	case <-done:
	case <-t.C:
		gs.Stop()
		<-done
	}
}

// watchNode signals changed (coalesced) whenever the stage or the active
// config changes, until ctx ends.
func (s *Server) watchNode(ctx context.Context, changed chan<- struct{}) {
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}

	var wg sync.WaitGroup
	defer wg.Wait()

	for _, p := range []bus.Pointer{stagePtr, configPtr} {
		wg.Go(func() {
			for ctx.Err() == nil {
				w, err := s.node.Store().Watch(ctx, p)
				if err != nil {
					return // only when ctx is done
				}

				// An overrun closes the watch: look at the node again
				// and watch anew, nothing is lost but intermediate states.
				for range w.Events() {
					notify()
				}

				notify()
			}
		})
	}
}

// acceptor owns the listener: each server generation accepts through a
// listener of its own, so a restart never closes the port, and at most
// limit connections are open at once.
type acceptor struct {
	lis    net.Listener
	conns  chan net.Conn
	slots  chan struct{}
	done   chan struct{}
	failed chan struct{}
	err    error // set before failed is closed
	once   sync.Once
}

func newAcceptor(lis net.Listener, limit int) *acceptor {
	a := &acceptor{
		lis:    lis,
		conns:  make(chan net.Conn),
		slots:  make(chan struct{}, limit),
		done:   make(chan struct{}),
		failed: make(chan struct{}),
	}

	go a.run()

	return a
}

func (a *acceptor) run() {
	backoff := 5 * time.Millisecond

	for {
		select {
		case a.slots <- struct{}{}:
		case <-a.done:
			return
		}

		c, err := a.lis.Accept()
		if err != nil {
			<-a.slots

			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// EMFILE and the like: wait a little rather than spin.
				select {
				case <-time.After(backoff):
				case <-a.done:
					return
				}

				backoff = min(2*backoff, time.Second)

				continue
			}

			select {
			case <-a.done: // closed by us
			default:
				a.err = err
				close(a.failed)
			}

			return
		}

		backoff = 5 * time.Millisecond
		conn := &slotConn{Conn: c, release: func() { <-a.slots }}

		select {
		case a.conns <- conn:
		case <-a.done:
			conn.Close()
			return
		}
	}
}

func (a *acceptor) close() {
	a.once.Do(func() {
		close(a.done)
		a.lis.Close()
	})
}

// generation returns a listener for one gRPC server; closing it (as
// grpc.Server.Stop does) leaves the port open for the next.
func (a *acceptor) generation() net.Listener {
	return &genListener{a: a, closed: make(chan struct{})}
}

type genListener struct {
	a      *acceptor
	closed chan struct{}
	once   sync.Once
}

func (l *genListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.a.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.a.done:
		return nil, net.ErrClosed
	case <-l.a.failed:
		return nil, l.a.err
	}
}

func (l *genListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *genListener) Addr() net.Addr { return l.a.lis.Addr() }

// slotConn gives its connection slot back once closed.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)

	return err
}
