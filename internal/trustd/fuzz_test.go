package trustd

import (
	"context"
	"crypto/x509"
	"net"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/pki"
)

// FuzzCertificateRequest feeds arbitrary bytes as the CSR to the handler
// (past the token check, which runs before it): it must never panic, must
// blame the request for anything it refuses, and anything it signs must be
// a server-only certificate without roles from the OS CA.
func FuzzCertificateRequest(f *testing.F) {
	ca, _, _ := cas(f)

	srv, err := NewServer(Options{
		CA:         ca,
		Token:      testToken,
		ServerCert: ServerCertificate(ca, pki.ServerOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}),
	})
	if err != nil {
		f.Fatal(err)
	}

	svc := &service{s: srv}
	roots := trustPool(f, ca)

	f.Add(newCSR(f, pki.CSROptions{CommonName: "w", IPs: []net.IP{net.IPv4(10, 5, 0, 3)}, DNSNames: []string{"w"}}))
	f.Add(newCSR(f, pki.CSROptions{CommonName: "admin", Organizations: []string{pki.RoleAdmin}, DNSNames: []string{"w"}}))
	f.Add(newCSR(f, pki.CSROptions{CommonName: "no names"}))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add([]byte{})
	f.Add([]byte("\x30\x82\xff\xff"))

	f.Fuzz(func(t *testing.T, csr []byte) {
		resp, err := svc.Certificate(context.Background(), &security.CertificateRequest{Csr: csr})
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("refused with %v, want InvalidArgument", err)
			}

			return
		}

		crt, err := pki.ParseCertificatePEM(resp.GetCrt())
		if err != nil {
			t.Fatal(err)
		}

		if len(crt.Subject.Organization) != 0 || crt.IsCA ||
			!slices.Equal(crt.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || len(crt.UnknownExtKeyUsage) != 0 {
			t.Fatalf("issued O=%q CA=%v EKU=%v %v", crt.Subject.Organization, crt.IsCA, crt.ExtKeyUsage, crt.UnknownExtKeyUsage)
		}

		if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Fatal(err)
		}
	})
}
