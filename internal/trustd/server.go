// Package trustd is the certificate service of control-plane nodes (port
// 50001). A node without the OS CA key (a worker) cannot issue its own apid
// server certificate; it sends a CSR and the cluster's machine token to
// trustd, which signs it with the OS CA as a server-authentication-only
// certificate without roles. Sign and IssueServerCertificate are the
// worker's side.
package trustd

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/pki"
)

// DefaultTTL is the lifetime of issued certificates; a worker renews its
// apid certificate at half-life, as control-plane nodes do.
const DefaultTTL = 24 * time.Hour

// Limits on what an unauthenticated peer can make trustd hold: trustd is
// reachable by anything that can reach the control plane, before any
// token check.
const (
	// MaxRequestSize caps one request; a CSR is a few hundred bytes.
	MaxRequestSize = 64 << 10
	// MaxStreamsPerConn caps concurrent calls on one connection.
	MaxStreamsPerConn = 16
	// MaxConnections caps open connections; more wait in the backlog.
	MaxConnections = 256
	// RPCTimeout bounds one call on the server side.
	RPCTimeout = 10 * time.Second
	// MaxWatchers caps WatchAffiliates streams, each of which holds a
	// connection for as long as its worker runs: half the connections
	// stay free for certificates. Workers past the cap poll instead.
	MaxWatchers = MaxConnections / 2
	// keepaliveTime is how long a connection may be silent before a ping
	// checks its peer: a watching worker that lost power frees its slot
	// in keepaliveTime+keepaliveTimeout, not when TCP gives up.
	keepaliveTime    = 30 * time.Second
	keepaliveTimeout = 10 * time.Second

	maxHeaderListSize = 16 << 10
	stopGrace         = 5 * time.Second
	// tokenKey is the metadata key Talos's basic token credentials use.
	tokenKey = "token"
)

// Options configure a Server.
type Options struct {
	// CA is the OS CA (machine.ca) with its key: it signs the certificates.
	CA *pki.CertAndKey
	// AcceptedCAs are further trusted CAs (machine.acceptedCAs, PEM). The
	// response's ca is CA's certificate followed by these, so a worker
	// learns the whole trust set during a rotation.
	AcceptedCAs [][]byte
	// Token is machine.token; callers must present it.
	Token string
	// ServerCert is trustd's own serving certificate, asked for at every
	// handshake (ServerCertificate makes one that renews itself).
	ServerCert func() (*tls.Certificate, error)
	// TTL is the lifetime of issued certificates, DefaultTTL when zero.
	TTL time.Duration
	// Log receives one line per issued certificate; discarded when nil.
	Log io.Writer
	// Registry serves discovery to workers (Affiliates); nil answers
	// Unimplemented. WatchAffiliates needs a discovery.Watcher, and
	// Affiliates with leave a discovery.Remover.
	Registry discovery.Registry
}

// Server is a trustd instance. It holds no per-call state: Serve may run on
// several listeners.
type Server struct {
	ca         *pki.CertAndKey
	caPEM      []byte // the response's ca
	tokenSum   [sha256.Size]byte
	serverCert func() (*tls.Certificate, error)
	ttl        time.Duration
	log        *log.Logger // serializes lines from concurrent calls
	registry   discovery.Registry
	// feed is the one watch of registry all WatchAffiliates streams share
	// (nil when registry cannot watch).
	feed *discovery.Feed
	// watchSlots holds a token per open WatchAffiliates stream.
	watchSlots chan struct{}
}

// NewServer checks opts and returns a server. The CA is checked here so a
// misconfigured node fails at start, not at a worker's first request.
func NewServer(opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("trustd: no machine token: an empty token would let anyone in")
	}

	if opts.ServerCert == nil {
		return nil, errors.New("trustd: no serving certificate source (see ServerCertificate)")
	}

	if opts.CA == nil || len(opts.CA.Key) == 0 {
		return nil, errors.New("trustd: the OS CA key is required to issue certificates")
	}

	if err := opts.CA.Validate(); err != nil {
		return nil, fmt.Errorf("trustd: OS CA: %w", err)
	}

	caCrt, err := opts.CA.Certificate()
	if err != nil {
		return nil, fmt.Errorf("trustd: OS CA: %w", err)
	}

	if !caCrt.IsCA {
		return nil, errors.New("trustd: OS CA: certificate is not a certificate authority")
	}

	caPEM, err := acceptedPEM(opts.CA.Crt, opts.AcceptedCAs)
	if err != nil {
		return nil, err
	}

	ttl := opts.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}

	if ttl < 0 {
		return nil, fmt.Errorf("trustd: invalid certificate lifetime %v", ttl)
	}

	w := opts.Log
	if w == nil {
		w = io.Discard
	}

	var feed *discovery.Feed
	if watcher, ok := opts.Registry.(discovery.Watcher); ok {
		feed = discovery.NewFeed(watcher)
	}

	return &Server{
		ca:         opts.CA,
		caPEM:      caPEM,
		tokenSum:   sha256.Sum256([]byte(opts.Token)),
		serverCert: opts.ServerCert,
		ttl:        ttl,
		log:        log.New(w, "[talos] trustd: ", 0),
		registry:   opts.Registry,
		feed:       feed,
		watchSlots: make(chan struct{}, MaxWatchers),
	}, nil
}

// acceptedPEM is the issuing CA followed by the accepted CAs, each
// certificate once, so the issued certificate always chains to the set.
func acceptedPEM(issuing []byte, accepted [][]byte) ([]byte, error) {
	var out []byte

	seen := map[string]bool{}

	for i, p := range append([][]byte{issuing}, accepted...) {
		crts, err := parseCertificates(p)
		if err != nil && i == 0 {
			return nil, fmt.Errorf("trustd: OS CA: %w", err)
		} else if err != nil {
			return nil, fmt.Errorf("trustd: acceptedCAs[%d]: %w", i-1, err)
		}

		for _, c := range crts {
			if !seen[string(c.Raw)] {
				seen[string(c.Raw)] = true
				out = append(out, encodeCertificate(c)...)
			}
		}
	}

	return out, nil
}

// Serve serves on lis until ctx ends, then lets calls in flight finish
// (briefly) and returns nil. lis is closed when Serve returns.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	gs := s.newGRPCServer(ctx.Done())
	ll := newLimitListener(lis, MaxConnections)

	served := make(chan error, 1)

	go func() { served <- gs.Serve(ll) }()

	s.log.Printf("serving on %s", lis.Addr())

	select {
	case <-ctx.Done():
		stopGraceful(gs)
		<-served

		return nil
	case err := <-served:
		return fmt.Errorf("trustd: serve on %s: %w", lis.Addr(), err)
	}
}

// newGRPCServer is a server whose watch streams end once stopping is
// closed: a graceful stop waits for every call, and a stream would hold
// it for the whole grace period.
func (s *Server) newGRPCServer(stopping <-chan struct{}) *grpc.Server {
	gs := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(s.tlsConfig())),
		grpc.MaxRecvMsgSize(MaxRequestSize),
		grpc.MaxConcurrentStreams(MaxStreamsPerConn),
		grpc.MaxHeaderListSize(maxHeaderListSize),
		grpc.ConnectionTimeout(RPCTimeout), // TLS handshake included
		// A worker calls once and goes: idle connections only hold slots.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: time.Minute, Time: keepaliveTime, Timeout: keepaliveTimeout}),
		// Watching workers ping as often as we do, to find a dead control
		// plane; the default policy (5 min) would cut them off for it.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveTime / 2}),
		grpc.ChainUnaryInterceptor(s.unary),
		// Streams (WatchAffiliates) are authenticated as calls are, but
		// not bounded: they last as long as the worker watches.
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if err := s.authenticate(ss.Context()); err != nil {
				return err
			}

			return handler(srv, ss)
		}),
	)

	security.RegisterSecurityServiceServer(gs, &service{s: s, stopping: stopping})

	return gs
}

// tlsConfig is server-only TLS 1.3: the callers are nodes that have no
// certificate yet; they prove themselves with the token instead.
func (s *Server) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{"h2"},
		ClientAuth: tls.NoClientCert,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, err := s.serverCert()
			if err != nil {
				// The handshake fails; say why here, the peer only
				// sees an alert.
				s.log.Printf("no serving certificate: %v", err)
				return nil, fmt.Errorf("trustd: serving certificate: %w", err)
			}

			return c, nil
		},
	}
}

// unary authenticates every call before its handler runs, and bounds it.
func (s *Server) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authenticate(ctx); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, RPCTimeout)
	defer cancel()

	return handler(ctx, req)
}

// authenticate checks the "token" metadata against machine.token. Hashing
// both sides first makes the comparison constant-time in the length too.
func (s *Server) authenticate(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(tokenKey)

	switch {
	case len(vals) == 0:
		return status.Error(codes.Unauthenticated, `trustd: no token: send the machine token (machine.token) as the "token" metadata`)
	case len(vals) > 1:
		return status.Error(codes.Unauthenticated, `trustd: more than one "token" metadata value`)
	}

	sum := sha256.Sum256([]byte(vals[0]))
	if subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) != 1 {
		return status.Error(codes.Unauthenticated, "trustd: wrong token: it is not this cluster's machine.token")
	}

	return nil
}

// stopGraceful lets calls in flight finish for stopGrace, then cuts the rest.
func stopGraceful(gs *grpc.Server) {
	done := make(chan struct{})

	go func() {
		gs.GracefulStop()
		close(done)
	}()

	t := time.NewTimer(stopGrace)
	defer t.Stop()

	select {
	case <-done:
	case <-t.C:
		gs.Stop()
		<-done
	}
}

// limitListener holds at most n connections open; Accept waits for a
// slot, so further peers queue in the kernel's backlog instead of each
// costing a goroutine and a TLS handshake.
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}

	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}

	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })

	return l.Listener.Close()
}

// slotConn gives its slot back once closed (grpc may close twice).
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
