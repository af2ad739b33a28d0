package trustd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/pki"
)

const (
	testToken = "abcdef.0123456789abcdef"
	// testTimeout bounds every wait in these tests; none should come near.
	testTimeout = 30 * time.Second
)

var (
	casOnce        sync.Once
	osCA, otherCA  *pki.CertAndKey // the cluster's OS CA, and a stranger's
	acceptedCA     *pki.CertAndKey // a CA accepted during a rotation
	errCAGenerated error
)

func cas(tb testing.TB) (issuing, other, accepted *pki.CertAndKey) {
	tb.Helper()

	casOnce.Do(func() {
		osCA, errCAGenerated = pki.NewCA(pki.CAOptions{Organization: "talos", CommonName: "test OS CA"})
		if errCAGenerated == nil {
			otherCA, errCAGenerated = pki.NewCA(pki.CAOptions{Organization: "talos", CommonName: "another cluster"})
		}

		if errCAGenerated == nil {
			acceptedCA, errCAGenerated = pki.NewCA(pki.CAOptions{Organization: "talos", CommonName: "old OS CA"})
		}
	})

	if errCAGenerated != nil {
		tb.Fatal(errCAGenerated)
	}

	return osCA, otherCA, acceptedCA
}

// testServer is a running trustd on 127.0.0.1.
type testServer struct {
	addr string
	log  *syncBuffer
	srv  *Server
	// stop ends Serve and waits for it (the test's end does too).
	stop func()
}

// startServer serves trustd with the test OS CA on lis (a fresh
// 127.0.0.1 port when nil) until the test ends.
func startServer(tb testing.TB, lis net.Listener) *testServer {
	tb.Helper()

	return startServerWith(tb, lis, nil)
}

// startServerWith is startServer serving discovery from registry.
func startServerWith(tb testing.TB, lis net.Listener, registry discovery.Registry) *testServer {
	tb.Helper()

	return startServerTuned(tb, lis, registry, nil)
}

// startServerTuned is startServerWith with tune applied to the server
// before it serves.
func startServerTuned(tb testing.TB, lis net.Listener, registry discovery.Registry, tune func(*Server)) *testServer {
	tb.Helper()

	ca, _, accepted := cas(tb)
	logBuf := &syncBuffer{}

	srv, err := NewServer(Options{
		CA:          ca,
		AcceptedCAs: [][]byte{accepted.Crt},
		Token:       testToken,
		ServerCert:  ServerCertificate(ca, pki.ServerOptions{CommonName: "trustd", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}),
		Log:         logBuf,
		Registry:    registry,
	})
	if err != nil {
		tb.Fatal(err)
	}

	if tune != nil {
		tune(srv)
	}

	if lis == nil {
		if lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			tb.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	go func() { done <- srv.Serve(ctx, lis) }()

	stop := sync.OnceFunc(func() {
		cancel()

		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	tb.Cleanup(stop)

	return &testServer{addr: lis.Addr().String(), log: logBuf, srv: srv, stop: stop}
}

// closedAddr is a 127.0.0.1 address nothing listens on (connection refused).
func closedAddr(tb testing.TB) string {
	tb.Helper()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}

	addr := lis.Addr().String()
	lis.Close()

	return addr
}

// trustPool is what a worker's config trusts.
func trustPool(tb testing.TB, cas ...*pki.CertAndKey) *x509.CertPool {
	tb.Helper()

	pems := make([][]byte, 0, len(cas))
	for _, c := range cas {
		pems = append(pems, c.Crt)
	}

	pool, err := pki.CertPool(pems...)
	if err != nil {
		tb.Fatal(err)
	}

	return pool
}

// newCSR makes a fresh key and a CSR for opts.
func newCSR(tb testing.TB, opts pki.CSROptions) []byte {
	tb.Helper()

	key, err := pki.GenerateKey(pki.Ed25519)
	if err != nil {
		tb.Fatal(err)
	}

	keyPEM, err := pki.EncodePrivateKeyPEM(key)
	if err != nil {
		tb.Fatal(err)
	}

	csr, err := pki.NewCSR(keyPEM, opts)
	if err != nil {
		tb.Fatal(err)
	}

	return csr
}

// rawClient is a SecurityService client that sends whatever metadata the
// test puts in the context, and no token of its own.
func rawClient(tb testing.TB, addr string) security.SecurityServiceClient {
	tb.Helper()

	ca, _, _ := cas(tb)
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: trustPool(tb, ca)})

	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		tb.Fatal(err)
	}

	tb.Cleanup(func() { conn.Close() })

	return security.NewSecurityServiceClient(conn)
}

func testContext(tb testing.TB) context.Context {
	tb.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	tb.Cleanup(cancel)

	return ctx
}

// syncBuffer is a log the server writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.buf.String()
}
