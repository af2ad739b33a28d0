// Package client dials the node API (apid, port 50000) the way talosctl
// does: mutual TLS with the credentials of a talosconfig context, a list of
// endpoints tried in order, and per-node calls routed by the `node` gRPC
// metadata. It is the only gRPC client talosctl uses, and it never imports
// node-side packages.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/talosbox/talosbox/internal/api/inspect"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/api/storage"
	timeapi "github.com/talosbox/talosbox/internal/api/time"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

const (
	// MaxMessageSize caps gRPC messages both ways. It matches apid's limit,
	// so a reply the server is willing to send is never refused here (a
	// full machine config or a large resource list fits easily). apid caps
	// its replies and an applied config at 16 MiB.
	MaxMessageSize = 16 << 20

	// DefaultDialTimeout bounds connecting to one endpoint (TCP and TLS), so
	// an unreachable endpoint costs seconds before the next one is tried.
	DefaultDialTimeout = 5 * time.Second
)

// Options say where and how to connect.
type Options struct {
	// Endpoints are apid addresses, tried in order: "host" or "host:port".
	Endpoints []string

	// CA, Crt and Key are PEM: the OS CA that signs the servers'
	// certificates and the client certificate carrying the caller's roles.
	CA, Crt, Key []byte

	// Insecure skips server verification and presents no client
	// certificate: the maintenance-mode API before a node has a config.
	Insecure bool

	// DialTimeout bounds each connection attempt; DefaultDialTimeout when 0.
	DialTimeout time.Duration
}

// OptionsFromContext builds Options from a talosconfig context. endpoints,
// when not empty (the -e flag), replace the context's.
func OptionsFromContext(ctx *talosconfig.Context, endpoints []string) (Options, error) {
	if len(endpoints) == 0 {
		endpoints = ctx.Endpoints
	}

	ca, pair, err := ctx.Credentials()
	if err != nil {
		return Options{}, fmt.Errorf("talosconfig credentials: %w", err)
	}

	return Options{Endpoints: endpoints, CA: ca, Crt: pair.Crt, Key: pair.Key}, nil
}

// Client is a connection to one of a set of endpoints. It is safe for
// concurrent use; per-node calls share the connection.
type Client struct {
	conn      *grpc.ClientConn
	endpoints []string

	Machine  machine.MachineServiceClient
	Image    machine.ImageServiceClient
	Resource resource.ResourceServiceClient
	Time     timeapi.TimeServiceClient
	Inspect  inspect.InspectServiceClient
	Storage  storage.StorageServiceClient
}

// resolverSeq makes each client's resolver scheme unique: manual resolvers
// are registered per ClientConn, but a distinct scheme keeps the target
// string readable in errors and logs.
var resolverSeq atomic.Uint64

// New prepares a client. Nothing is dialled until the first call; then the
// endpoints are tried in order (pick_first), moving on when one refuses or
// does not answer within the dial timeout.
func New(opts Options) (*Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("no endpoints: set them with --endpoints or `talosctl config endpoint`")
	}

	addrs := make([]resolver.Address, 0, len(opts.Endpoints))
	endpoints := make([]string, 0, len(opts.Endpoints))

	for _, ep := range opts.Endpoints {
		hostport, host, err := NormalizeEndpoint(ep)
		if err != nil {
			return nil, err
		}

		// ServerName is what the server certificate is verified against:
		// endpoints are usually IPs, matched against the certificate's IP SANs.
		addrs = append(addrs, resolver.Address{Addr: hostport, ServerName: host})
		endpoints = append(endpoints, hostport)
	}

	tlsConfig, err := tlsConfig(opts)
	if err != nil {
		return nil, err
	}

	timeout := opts.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}

	scheme := "talosbox-" + strconv.FormatUint(resolverSeq.Add(1), 10)
	res := manual.NewBuilderWithScheme(scheme)
	res.InitialState(resolver.State{Addresses: addrs})

	dialer := &net.Dialer{Timeout: timeout}

	conn, err := grpc.NewClient(scheme+":///api",
		grpc.WithResolvers(res),
		grpc.WithTransportCredentials(certVerdict{credentials.NewTLS(tlsConfig)}),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", addr)
		}),
		grpc.WithConnectParams(grpc.ConnectParams{
			// A node that reboots comes back within seconds; a long backoff
			// would only make `reboot --wait` slower to notice.
			Backoff:           backoff.Config{BaseDelay: 500 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: timeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", strings.Join(endpoints, ","), err)
	}

	return fromConn(conn, endpoints), nil
}

// NewLocal is a client of the node's own apid through its local socket
// (apid.Options.LocalSocket), which needs no certificate: only the node's
// processes reach it, and it serves them as os:reader. The console
// dashboard reads the node through it.
func NewLocal(socket string) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", socket, err)
	}

	return fromConn(conn, []string{socket}), nil
}

func fromConn(conn *grpc.ClientConn, endpoints []string) *Client {
	return &Client{
		conn:      conn,
		endpoints: endpoints,
		Machine:   machine.NewMachineServiceClient(conn),
		Image:     machine.NewImageServiceClient(conn),
		Resource:  resource.NewResourceServiceClient(conn),
		Time:      timeapi.NewTimeServiceClient(conn),
		Inspect:   inspect.NewInspectServiceClient(conn),
		Storage:   storage.NewStorageServiceClient(conn),
	}
}

// Close releases the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Conn is the underlying connection, for services without a typed client.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Endpoints are the normalized host:port addresses, in dialling order.
func (c *Client) Endpoints() []string { return c.endpoints }

// NormalizeEndpoint turns "host", "host:port", "[v6]:port", a bare IPv6
// address or an https:// URL into host:port, and also returns the host.
func NormalizeEndpoint(ep string) (hostport, host string, err error) {
	s := strings.TrimSpace(ep)
	s = strings.TrimPrefix(s, "https://")
	s = strings.TrimSuffix(s, "/")

	if s == "" {
		return "", "", fmt.Errorf("endpoint %q: empty", ep)
	}

	if h, p, err := net.SplitHostPort(s); err == nil {
		if h == "" {
			return "", "", fmt.Errorf("endpoint %q: empty host", ep)
		}

		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return "", "", fmt.Errorf("endpoint %q: invalid port %q", ep, p)
		}

		return net.JoinHostPort(h, p), h, nil
	}

	// A bare IPv6 address has colons but no brackets; so does a broken
	// "host:port", which ParseIP rejects.
	if strings.Contains(s, ":") && net.ParseIP(strings.Trim(s, "[]")) == nil {
		return "", "", fmt.Errorf("endpoint %q: expected host or host:port", ep)
	}

	h := strings.Trim(s, "[]")

	return net.JoinHostPort(h, strconv.Itoa(constants.ApidPort)), h, nil
}

// tlsConfig is TLS 1.3 with the context's CA and client certificate, or,
// in insecure mode, TLS without verification and without a certificate.
func tlsConfig(opts Options) (*tls.Config, error) {
	if opts.Insecure {
		return &tls.Config{
			MinVersion:         tls.VersionTLS13,
			InsecureSkipVerify: true, //nolint:gosec // maintenance mode has no CA yet: that is the point of --insecure
		}, nil
	}

	if len(opts.CA) == 0 || len(opts.Crt) == 0 || len(opts.Key) == 0 {
		return nil, errors.New("client credentials are missing: the talosconfig context needs ca, crt and key (or use --insecure in maintenance mode)")
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(opts.CA) {
		return nil, errors.New("client credentials: the CA holds no PEM certificate")
	}

	pair, err := tls.X509KeyPair(opts.Crt, opts.Key)
	if err != nil {
		return nil, fmt.Errorf("client credentials: %w", err)
	}

	// The certificate is sent even when the node names other CAs: its
	// refusal then says "unknown certificate authority", which tells a
	// talosconfig of another cluster, not "certificate required".
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		RootCAs:    pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &pair, nil
		},
	}, nil
}
