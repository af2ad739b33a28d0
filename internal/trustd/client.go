package trustd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/pki"
)

// Client-side timing, as Talos's worker: 10 s attempts, exponential
// backoff between rounds up to a minute.
const (
	AttemptTimeout    = 10 * time.Second
	DefaultMaxBackoff = time.Minute
	initialBackoff    = 250 * time.Millisecond
	// maxResponseSize caps what a (verified) trustd can send back: a
	// certificate and a handful of CAs.
	maxResponseSize = 1 << 20
)

// SignRequest is a worker's request for a certificate.
type SignRequest struct {
	// Endpoints are control-plane nodes, "host" or "host:port" (DefaultPort
	// when none). They are tried in order, every round.
	Endpoints []string
	// Token is machine.token.
	Token string
	// Trust verifies trustd's serving certificate: the CAs of the worker's
	// own config (machine.ca and machine.acceptedCAs). Required: the token
	// must never be sent to a server that is not the cluster's.
	Trust *x509.CertPool
	// CSR is a PEM certificate request (pki.NewCSR).
	CSR []byte
	// MaxBackoff caps the wait between rounds, DefaultMaxBackoff when zero.
	MaxBackoff time.Duration
	// OnError, when set, is told of each failed attempt (to log it). It is
	// called from Sign's goroutine, before the next attempt.
	OnError func(endpoint string, err error)
}

// Sign asks trustd on each endpoint in turn to sign req.CSR until one does,
// waiting with exponential backoff between rounds, until ctx ends. It
// returns trustd's accepted CAs and the certificate, both PEM.
//
// A round in which every endpoint refused the request itself (wrong token,
// bad CSR) ends the retries: asking again would get the same answer.
// Connection and TLS failures are retried: the control plane may still be
// starting, or rotating its CA.
func Sign(ctx context.Context, req SignRequest) (caPEM, crtPEM []byte, err error) {
	endpoints, err := endpointAddrs(req.Endpoints)
	if err != nil {
		return nil, nil, err
	}

	switch {
	case req.Token == "":
		return nil, nil, errors.New("trustd: no machine token to authenticate with")
	case req.Trust == nil:
		return nil, nil, errors.New("trustd: no trusted CAs to verify trustd with")
	case len(req.CSR) == 0:
		return nil, nil, errors.New("trustd: no CSR to sign")
	}

	maxBackoff := req.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}

	names := strings.Join(endpoints, ", ")
	backoff := min(initialBackoff, maxBackoff)

	for {
		var (
			lastErr error
			refused int
		)

		for _, ep := range endpoints {
			caPEM, crtPEM, err := signOnce(ctx, ep, &req)
			if err == nil {
				return caPEM, crtPEM, nil
			}

			lastErr = fmt.Errorf("%s: %w", ep, err)

			if req.OnError != nil {
				req.OnError(ep, err)
			}

			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("trustd: no certificate from %s: %w (last error: %w)", names, ctx.Err(), lastErr)
			}

			if isRefusal(err) {
				refused++
			}
		}

		if refused == len(endpoints) {
			return nil, nil, fmt.Errorf("trustd: request refused by %s: %w", names, lastErr)
		}

		// Jitter spreads the workers of a rebooted cluster apart.
		wait := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(wait)

		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("trustd: no certificate from %s: %w (last error: %w)", names, ctx.Err(), lastErr)
		case <-t.C:
		}

		backoff = min(2*backoff, maxBackoff)
	}
}

// isRefusal says whether trustd answered and said no to this request,
// as opposed to not being reachable or verifiable.
func isRefusal(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.InvalidArgument:
		return true
	default:
		return false
	}
}

// signOnce makes one attempt on one endpoint, on a connection of its own:
// a worker calls trustd rarely, and a fresh connection re-verifies the
// server against today's trust.
func signOnce(ctx context.Context, endpoint string, req *SignRequest) ([]byte, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()

	conn, err := dial(endpoint, req.Token, req.Trust)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()

	resp, err := security.NewSecurityServiceClient(conn).Certificate(ctx, &security.CertificateRequest{Csr: req.CSR})
	if err != nil {
		return nil, nil, err
	}

	if _, err := pki.ParseCertificatePEM(resp.GetCrt()); err != nil {
		return nil, nil, fmt.Errorf("the response holds no usable certificate: %w", err)
	}

	return resp.GetCa(), resp.GetCrt(), nil
}

// dial connects to trustd at endpoint, verifying it against trust and
// sending token with every call.
func dial(endpoint, token string, trust *x509.CertPool, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	// ServerName is left empty: grpc sets it to the endpoint's host, so
	// the certificate is checked against the name or IP we dialled.
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: trust})

	// passthrough: the address is dialled as given (host names resolved
	// by the dialer), with no resolver goroutines for one call.
	conn, err := grpc.NewClient("passthrough:///"+endpoint, append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(tokenCredentials(token)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResponseSize)),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}

	return conn, nil
}

// tokenCredentials sends machine.token as the "token" metadata of every
// call, as Talos's basic token credentials do.
type tokenCredentials string

func (t tokenCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{tokenKey: string(t)}, nil
}

// RequireTransportSecurity keeps the token off plaintext connections.
func (tokenCredentials) RequireTransportSecurity() bool { return true }

// endpointAddrs normalizes endpoints to host:port, dropping duplicates.
func endpointAddrs(endpoints []string) ([]string, error) {
	out := make([]string, 0, len(endpoints))

	for _, ep := range endpoints {
		addr, err := endpointAddr(ep)
		if err != nil {
			return nil, err
		}

		if !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}

	if len(out) == 0 {
		return nil, errors.New("trustd: no control-plane endpoints")
	}

	return out, nil
}

// endpointAddr turns "host", "host:port", "[v6]", "v6" or "[v6]:port" into
// host:port.
func endpointAddr(ep string) (string, error) {
	ep = strings.TrimSpace(ep)

	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		// No port: a bare host, or an IPv6 address with or without brackets.
		host, port = strings.TrimSuffix(strings.TrimPrefix(ep, "["), "]"), strconv.Itoa(constants.TrustdPort)
	}

	if host == "" {
		return "", fmt.Errorf("trustd: endpoint %q has no host", ep)
	}

	// Catch a URL ("https://cp:6443") here rather than retrying it forever.
	if strings.ContainsAny(host, "/ \t[]") {
		return "", fmt.Errorf("trustd: endpoint %q is not host or host:port", ep)
	}

	if _, err := netip.ParseAddr(host); err != nil && strings.Contains(host, ":") {
		return "", fmt.Errorf("trustd: endpoint %q is not host or host:port", ep)
	}

	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", fmt.Errorf("trustd: endpoint %q: invalid port %q", ep, port)
	}

	return net.JoinHostPort(host, port), nil
}
