package trustd

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/pki"
)

// A worker gets a server certificate for its names that chains to the OS
// CA, and the accepted CAs to go with it.
func TestWorkerGetsServerCertificate(t *testing.T) {
	ts := startServer(t, nil)
	ca, _, accepted := cas(t)

	ips := []net.IP{net.ParseIP("10.5.0.3"), net.ParseIP("fd00::3")}
	dns := []string{"worker-1", "worker-1.example.org"}

	pair, err := IssueServerCertificate(testContext(t), SignRequest{
		Endpoints: []string{ts.addr},
		Token:     testToken,
		Trust:     trustPool(t, ca),
	}, ServerOptions{CommonName: "worker-1", IPs: ips, DNSNames: dns, KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	crt, err := pair.Certificate()
	if err != nil {
		t.Fatal(err)
	}

	if _, err := crt.Verify(x509.VerifyOptions{Roots: trustPool(t, ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("the certificate does not chain to the OS CA: %v", err)
	}

	if !slices.Equal(crt.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || len(crt.UnknownExtKeyUsage) != 0 {
		t.Errorf("extended key usage = %v %v, want server authentication only", crt.ExtKeyUsage, crt.UnknownExtKeyUsage)
	}

	if crt.Subject.CommonName != "worker-1" || !slices.Equal(crt.DNSNames, dns) || len(crt.IPAddresses) != len(ips) {
		t.Errorf("subject/SANs = %q %v %v", crt.Subject.CommonName, crt.DNSNames, crt.IPAddresses)
	}

	if life := crt.NotAfter.Sub(crt.NotBefore); life < DefaultTTL || life > DefaultTTL+2*time.Minute {
		t.Errorf("lifetime = %v, want about %v", life, DefaultTTL)
	}

	// The key is the worker's, TLS-ready.
	if _, err := pair.TLSCertificate(); err != nil {
		t.Fatal(err)
	}

	// The response's CA bundle is the issuing CA and the accepted ones.
	caPEM, _, err := Sign(testContext(t), SignRequest{Endpoints: []string{ts.addr}, Token: testToken, Trust: trustPool(t, ca), CSR: newCSR(t, pki.CSROptions{DNSNames: []string{"w"}})})
	if err != nil {
		t.Fatal(err)
	}

	got, err := parseCertificates(caPEM)
	if err != nil || len(got) != 2 || !bytes.Contains(caPEM, bytes.TrimSpace(ca.Crt)) || !bytes.Contains(caPEM, bytes.TrimSpace(accepted.Crt)) {
		t.Errorf("ca = %d certificates (%v), want the OS CA and the accepted CA", len(got), err)
	}

	logged := ts.log.String()
	if !strings.Contains(logged, `CN="worker-1"`) || !strings.Contains(logged, "10.5.0.3") || strings.Contains(logged, testToken) {
		t.Errorf("log:\n%s", logged)
	}
}

// extension builds a CSR extension request.
func extension(t *testing.T, oid asn1.ObjectIdentifier, val any) pkix.Extension {
	t.Helper()

	der, err := asn1.Marshal(val)
	if err != nil {
		t.Fatal(err)
	}

	return pkix.Extension{Id: oid, Value: der}
}

// Whatever the CSR asks for, the certificate cannot act as a talosctl
// client with roles, nor as a CA.
func TestCertificateDropsRolesAndClientAuth(t *testing.T) {
	ts := startServer(t, nil)
	ca, _, _ := cas(t)

	key, err := pki.GenerateKey(pki.Ed25519)
	if err != nil {
		t.Fatal(err)
	}

	type basicConstraints struct {
		IsCA bool `asn1:"optional"`
	}

	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "evil", Organization: []string{pki.RoleAdmin, "os:impersonator"}},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtraExtensions: []pkix.Extension{
			extension(t, asn1.ObjectIdentifier{2, 5, 29, 37}, []asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 2}}), // EKU clientAuth
			extension(t, asn1.ObjectIdentifier{2, 5, 29, 19}, basicConstraints{IsCA: true}),
		},
	}, key)
	if err != nil {
		t.Fatal(err)
	}

	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})

	_, crtPEM, err := Sign(testContext(t), SignRequest{Endpoints: []string{ts.addr}, Token: testToken, Trust: trustPool(t, ca), CSR: csr})
	if err != nil {
		t.Fatal(err)
	}

	crt, err := pki.ParseCertificatePEM(crtPEM)
	if err != nil {
		t.Fatal(err)
	}

	if len(crt.Subject.Organization) != 0 {
		t.Errorf("organizations = %q, want none", crt.Subject.Organization)
	}

	if !slices.Equal(crt.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("extended key usage = %v, want server authentication only", crt.ExtKeyUsage)
	}

	if crt.IsCA {
		t.Error("the certificate is a CA")
	}

	// As apid's client verification would: no chain for client auth.
	if _, err := crt.Verify(x509.VerifyOptions{Roots: trustPool(t, ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the certificate verifies for client authentication")
	}
}

func TestAuthentication(t *testing.T) {
	ts := startServer(t, nil)
	ca, _, _ := cas(t)
	client := rawClient(t, ts.addr)
	req := &security.CertificateRequest{Csr: newCSR(t, pki.CSROptions{DNSNames: []string{"w"}})}

	for _, tc := range []struct {
		name string
		md   metadata.MD
		want string
	}{
		{"no token", nil, "no token"},
		{"wrong token", metadata.Pairs(tokenKey, "abcdef.0123456789abcdeX"), "wrong token"},
		{"empty token", metadata.Pairs(tokenKey, ""), "wrong token"},
		{"two tokens", metadata.Pairs(tokenKey, testToken, tokenKey, testToken), "more than one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := metadata.NewOutgoingContext(testContext(t), tc.md)

			_, err := client.Certificate(ctx, req)
			if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want Unauthenticated %q", err, tc.want)
			}
		})
	}

	// Sign stops at once on a refusal rather than retrying until its
	// deadline, and says where it was refused.
	_, _, err := Sign(testContext(t), SignRequest{Endpoints: []string{ts.addr}, Token: "wrong", Trust: trustPool(t, ca), CSR: req.Csr})
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), ts.addr) {
		t.Fatalf("Sign with a wrong token: %v", err)
	}

	if strings.Contains(ts.log.String(), "issued") {
		t.Errorf("a certificate was issued:\n%s", ts.log)
	}
}

func TestBadRequests(t *testing.T) {
	ts := startServer(t, nil)
	client := rawClient(t, ts.addr)
	ctx := metadata.AppendToOutgoingContext(testContext(t), tokenKey, testToken)

	good := newCSR(t, pki.CSROptions{DNSNames: []string{"w"}})
	block, _ := pem.Decode(good)

	tampered := slices.Clone(block.Bytes)
	tampered[len(tampered)-1] ^= 0xff // in the signature

	for _, tc := range []struct {
		name string
		csr  []byte
		code codes.Code
	}{
		{"empty", nil, codes.InvalidArgument},
		{"garbage", []byte("not a CSR at all"), codes.InvalidArgument},
		{"DER instead of PEM", block.Bytes, codes.InvalidArgument},
		{"wrong PEM type", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes}), codes.InvalidArgument},
		{"broken DER", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: block.Bytes[:len(block.Bytes)/2]}), codes.InvalidArgument},
		{"bad signature", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered}), codes.InvalidArgument},
		{"no names", newCSR(t, pki.CSROptions{CommonName: "w"}), codes.InvalidArgument},
		{"too large", bytes.Repeat([]byte{'a'}, MaxRequestSize+1), codes.ResourceExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Certificate(ctx, &security.CertificateRequest{Csr: tc.csr})
			if status.Code(err) != tc.code {
				t.Fatalf("err = %v, want %v", err, tc.code)
			}
		})
	}

	// The connection still serves good requests.
	if _, err := client.Certificate(ctx, &security.CertificateRequest{Csr: good}); err != nil {
		t.Fatal(err)
	}
}

func TestNewServerRefusesBadOptions(t *testing.T) {
	ca, other, _ := cas(t)
	serverCert := ServerCertificate(ca, pki.ServerOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	leaf, err := pki.NewServerCertificate(ca, pki.ServerOptions{DNSNames: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no token", Options{CA: ca, ServerCert: serverCert}, "no machine token"},
		{"no serving certificate", Options{CA: ca, Token: testToken}, "serving certificate"},
		{"no CA key", Options{CA: &pki.CertAndKey{Crt: ca.Crt}, Token: testToken, ServerCert: serverCert}, "CA key"},
		{"key of another CA", Options{CA: &pki.CertAndKey{Crt: ca.Crt, Key: other.Key}, Token: testToken, ServerCert: serverCert}, "does not match"},
		{"not a CA", Options{CA: leaf, Token: testToken, ServerCert: serverCert}, "not a certificate authority"},
		{"bad accepted CA", Options{CA: ca, Token: testToken, ServerCert: serverCert, AcceptedCAs: [][]byte{[]byte("junk")}}, "acceptedCAs[0]"},
		{"negative TTL", Options{CA: ca, Token: testToken, ServerCert: serverCert, TTL: -time.Hour}, "lifetime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewServer(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// The serving certificate is reused until half its life is over.
func TestServerCertificateRenewsAtHalfLife(t *testing.T) {
	ca, _, _ := cas(t)
	now := time.Now()
	get := ServerCertificate(ca, pki.ServerOptions{
		CommonName: "trustd",
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1)},
		TTL:        time.Hour,
		Now:        func() time.Time { return now },
	})

	first, err := get()
	if err != nil {
		t.Fatal(err)
	}

	now = now.Add(25 * time.Minute) // before half-life (NotBefore is backdated a minute)

	if again, _ := get(); again != first {
		t.Error("renewed before half-life")
	}

	now = now.Add(10 * time.Minute)

	renewed, err := get()
	if err != nil {
		t.Fatal(err)
	}

	if renewed == first || renewed.Leaf.SerialNumber.Cmp(first.Leaf.SerialNumber) == 0 {
		t.Error("not renewed after half-life")
	}

	if _, err := ServerCertificate(ca, pki.ServerOptions{})(); err == nil {
		t.Error("a serving certificate without names was issued")
	}
}
