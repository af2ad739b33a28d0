package trustd

import (
	"net"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/pki"
)

// BenchmarkCertificate is one Certificate call on an open connection:
// token check, CSR parse and signature check, signing with the (Ed25519)
// OS CA, over real gRPC and TLS on 127.0.0.1.
func BenchmarkCertificate(b *testing.B) {
	ts := startServer(b, nil)
	client := rawClient(b, ts.addr)
	ctx := metadata.AppendToOutgoingContext(testContext(b), tokenKey, testToken)
	req := &security.CertificateRequest{Csr: newCSR(b, pki.CSROptions{CommonName: "w", IPs: []net.IP{net.IPv4(10, 5, 0, 3)}})}

	for b.Loop() {
		if _, err := client.Certificate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSign is what a worker pays: a new connection, a TLS 1.3
// handshake verifying trustd, and the call.
func BenchmarkSign(b *testing.B) {
	ts := startServer(b, nil)
	ca, _, _ := cas(b)
	req := SignRequest{Endpoints: []string{ts.addr}, Token: testToken, Trust: trustPool(b, ca)}
	req.CSR = newCSR(b, pki.CSROptions{CommonName: "w", IPs: []net.IP{net.IPv4(10, 5, 0, 3)}})
	ctx := testContext(b)

	for b.Loop() {
		if _, _, err := Sign(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
