package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func verifyChain(t *testing.T, leaf *x509.Certificate, ca []byte, usage x509.ExtKeyUsage) {
	t.Helper()

	pool, err := CertPool(ca)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}, CurrentTime: leaf.NotBefore.Add(time.Hour),
	}); err != nil {
		t.Errorf("leaf does not chain to CA with usage %v: %v", usage, err)
	}
}

func TestAdminCertificate(t *testing.T) {
	b := newTestBundle(t)

	tests := []struct {
		name      string
		roles     []string
		ttl       time.Duration
		wantRoles []string
		wantTTL   time.Duration
	}{
		{"defaults", nil, 0, []string{"os:admin"}, 8760 * time.Hour},
		{"operator", []string{"os:operator"}, 48 * time.Hour, []string{"os:operator"}, 48 * time.Hour},
		{"several roles", []string{"os:reader", "os:etcd:backup"}, time.Hour, []string{"os:reader", "os:etcd:backup"}, time.Hour},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := b.AdminCertificate(tt.roles, tt.ttl)
			if err != nil {
				t.Fatal(err)
			}

			crt := mustCert(t, *pair)
			verifyChain(t, crt, b.Certs.OS.Crt, x509.ExtKeyUsageClientAuth)

			if !slices.Equal(crt.Subject.Organization, tt.wantRoles) {
				t.Errorf("O = %v, want %v", crt.Subject.Organization, tt.wantRoles)
			}

			if !slices.Equal(crt.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
				t.Errorf("EKU = %v, want ClientAuth only", crt.ExtKeyUsage)
			}

			if crt.IsCA {
				t.Error("client certificate is a CA")
			}

			if got := crt.NotAfter.Sub(crt.NotBefore) - clockSkewAllowance; got != tt.wantTTL {
				t.Errorf("lifetime = %v, want %v", got, tt.wantTTL)
			}

			if _, ok := crt.PublicKey.(ed25519.PublicKey); !ok {
				t.Errorf("key type %T, want ed25519", crt.PublicKey)
			}

			if err := pair.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestServerCertificate(t *testing.T) {
	b := newTestBundle(t)
	ips := []net.IP{net.ParseIP("10.5.0.2"), net.ParseIP("127.0.0.1"), net.ParseIP("fd00::2")}

	pair, err := NewServerCertificate(&b.Certs.OS, ServerOptions{
		CommonName: "node-1.example.org", IPs: ips, DNSNames: []string{"node-1", "node-1.example.org"},
		Now: func() time.Time { return fixedNow },
	})
	if err != nil {
		t.Fatal(err)
	}

	crt := mustCert(t, *pair)
	verifyChain(t, crt, b.Certs.OS.Crt, x509.ExtKeyUsageServerAuth)

	if !slices.Equal(crt.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("EKU = %v, want ServerAuth only", crt.ExtKeyUsage)
	}

	if crt.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("KeyUsage = %b, want DigitalSignature", crt.KeyUsage)
	}

	if got := crt.NotAfter.Sub(fixedNow); got != 24*time.Hour {
		t.Errorf("NotAfter - now = %v, want 24h", got)
	}

	for _, host := range []string{"10.5.0.2", "fd00::2", "node-1", "node-1.example.org"} {
		if err := crt.VerifyHostname(host); err != nil {
			t.Errorf("VerifyHostname(%s): %v", host, err)
		}
	}

	if err := crt.VerifyHostname("10.5.0.3"); err == nil {
		t.Error("certificate valid for an address it does not name")
	}

	if _, err := NewServerCertificate(&b.Certs.OS, ServerOptions{}); err == nil {
		t.Error("server certificate without SANs was issued")
	}
}

func TestSignCSR(t *testing.T) {
	b := newTestBundle(t)

	for _, kt := range []KeyType{Ed25519, ECDSAP256} {
		t.Run(kt.String(), func(t *testing.T) {
			key, err := GenerateKeyPEM(kt)
			if err != nil {
				t.Fatal(err)
			}

			csr, err := NewCSR(key, CSROptions{Organizations: []string{"os:admin"}, IPs: []net.IP{net.ParseIP("10.0.0.9")}, DNSNames: []string{"w1"}})
			if err != nil {
				t.Fatal(err)
			}

			crtPEM, err := SignCSR(&b.Certs.OS, csr, SignOptions{TTL: 2 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}

			pair := CertAndKey{Crt: crtPEM, Key: key}
			if err := pair.Validate(); err != nil {
				t.Fatalf("signed certificate does not match the CSR key: %v", err)
			}

			crt := mustCert(t, pair)
			verifyChain(t, crt, b.Certs.OS.Crt, x509.ExtKeyUsageClientAuth)

			if !slices.Equal(crt.Subject.Organization, []string{"os:admin"}) || !slices.Equal(crt.DNSNames, []string{"w1"}) ||
				len(crt.IPAddresses) != 1 || !crt.IPAddresses[0].Equal(net.ParseIP("10.0.0.9")) {
				t.Errorf("subject/SANs not copied: O=%v DNS=%v IP=%v", crt.Subject.Organization, crt.DNSNames, crt.IPAddresses)
			}

			if got := crt.NotAfter.Sub(crt.NotBefore) - clockSkewAllowance; got != 2*time.Hour {
				t.Errorf("lifetime = %v, want 2h", got)
			}
		})
	}

	t.Run("trustd style", func(t *testing.T) {
		key, _ := GenerateKeyPEM(Ed25519)
		csr, _ := NewCSR(key, CSROptions{Organizations: []string{"os:admin"}, IPs: []net.IP{net.ParseIP("10.0.0.9")}})

		crtPEM, err := SignCSR(&b.Certs.OS, csr, SignOptions{
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DropOrganizations: true,
		})
		if err != nil {
			t.Fatal(err)
		}

		crt := mustCert(t, CertAndKey{Crt: crtPEM})
		if len(crt.Subject.Organization) != 0 {
			t.Errorf("organizations kept: %v", crt.Subject.Organization)
		}

		verifyChain(t, crt, b.Certs.OS.Crt, x509.ExtKeyUsageServerAuth)
	})
}

func TestSignCSRErrors(t *testing.T) {
	b := newTestBundle(t)
	key, _ := GenerateKeyPEM(Ed25519)
	csr, _ := NewCSR(key, CSROptions{CommonName: "x"})
	admin, _ := b.AdminCertificate(nil, 0)

	tampered := tamperCSR(t, csr)

	tests := []struct {
		name string
		ca   *CertAndKey
		csr  []byte
		want string
	}{
		{"leaf as CA", admin, csr, "not a certificate authority"},
		{"CA key mismatch", &CertAndKey{Crt: b.Certs.OS.Crt, Key: b.Certs.Etcd.Key}, csr, "does not match"},
		{"CA without key", &CertAndKey{Crt: b.Certs.OS.Crt}, csr, "private key is missing"},
		{"not PEM", &b.Certs.OS, []byte("hello"), "no PEM block"},
		{"certificate instead of CSR", &b.Certs.OS, b.Certs.OS.Crt, `unexpected PEM block "CERTIFICATE"`},
		{"tampered CSR", &b.Certs.OS, tampered, "parse CSR: bad signature"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SignCSR(tt.ca, tt.csr, SignOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestCertAndKeyMismatch(t *testing.T) {
	b := newTestBundle(t)
	pair := CertAndKey{Crt: b.Certs.K8s.Crt, Key: b.Certs.Etcd.Key}

	if err := pair.Validate(); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("Validate = %v, want ErrKeyMismatch", err)
	}

	if _, err := pair.TLSCertificate(); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("TLSCertificate = %v, want ErrKeyMismatch", err)
	}

	certOnly := CertAndKey{Crt: b.Certs.K8s.Crt}
	if err := certOnly.Validate(); err != nil {
		t.Errorf("certificate without key: %v", err)
	}
}

func TestKeyPEMRoundTrip(t *testing.T) {
	for _, kt := range []KeyType{Ed25519, ECDSAP256} {
		t.Run(kt.String(), func(t *testing.T) {
			pemKey, err := GenerateKeyPEM(kt)
			if err != nil {
				t.Fatal(err)
			}

			key, err := ParsePrivateKeyPEM(pemKey)
			if err != nil {
				t.Fatal(err)
			}

			want := map[KeyType]string{Ed25519: "ED25519 PRIVATE KEY", ECDSAP256: "EC PRIVATE KEY"}[kt]
			if !strings.Contains(string(pemKey), "BEGIN "+want) {
				t.Errorf("PEM type is not %q:\n%s", want, pemKey)
			}

			switch key.(type) {
			case ed25519.PrivateKey:
				if kt != Ed25519 {
					t.Errorf("got ed25519 for %v", kt)
				}
			case *ecdsa.PrivateKey:
				if kt != ECDSAP256 {
					t.Errorf("got ecdsa for %v", kt)
				}
			}
		})
	}

	if _, err := ParsePrivateKeyPEM([]byte("-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n")); err == nil ||
		!strings.Contains(err.Error(), `unexpected PEM block "FOO"`) {
		t.Errorf("unknown PEM type: %v", err)
	}
}

// tamperCSR changes the requested common name "x" to "y" without re-signing.
func tamperCSR(t *testing.T, csrPEM []byte) []byte {
	t.Helper()

	block, _ := pem.Decode(csrPEM)
	i := bytes.Index(block.Bytes, []byte{0x13, 0x01, 'x'}) // PrintableString "x"

	if i < 0 {
		t.Fatal("common name not found in CSR")
	}

	block.Bytes[i+2] = 'y'

	return pem.EncodeToMemory(block)
}
