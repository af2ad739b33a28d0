package etcd

import (
	"crypto/x509"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/internal/pki"
)

func TestWriteCerts(t *testing.T) {
	t.Parallel()

	ca := newTestCA(t)
	dir := filepath.Join(t.TempDir(), "etcd")

	o := Options{
		Name:              "cp-1",
		PKIDir:            dir,
		CA:                ca,
		IPs:               []netip.Addr{netip.MustParseAddr("10.5.0.2"), netip.MustParseAddr("fd00::2")},
		DNSNames:          []string{"cp-1.example.org"},
		AdvertisePeerURLs: []string{"https://192.168.1.2:2380"},
	}

	if err := WriteCerts(o); err != nil {
		t.Fatal(err)
	}

	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("PKI dir mode: %v %v", st.Mode(), err)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}

	if len(entries) != 7 {
		t.Fatalf("want 7 files, got %d", len(entries))
	}

	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}

		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
	}

	roots, err := pki.CertPool(ca.Crt)
	if err != nil {
		t.Fatal(err)
	}

	dual := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	wantIPs := []string{"10.5.0.2", "fd00::2", "192.168.1.2", "127.0.0.1", "::1"}
	wantDNS := []string{"cp-1", "cp-1.example.org", "localhost"}

	for _, tc := range []struct {
		crt, key string
		eku      []x509.ExtKeyUsage
		sans     bool
	}{
		{PeerCertFile, PeerKeyFile, dual, true},
		{ServerCertFile, ServerKeyFile, dual, true},
		{AdminCertFile, AdminKeyFile, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, false},
	} {
		crtPEM, err := os.ReadFile(filepath.Join(dir, tc.crt))
		if err != nil {
			t.Fatal(err)
		}

		keyPEM, err := os.ReadFile(filepath.Join(dir, tc.key))
		if err != nil {
			t.Fatal(err)
		}

		pair := pki.CertAndKey{Crt: crtPEM, Key: keyPEM}
		if err := pair.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.crt, err)
		}

		crt, err := pair.Certificate()
		if err != nil {
			t.Fatal(err)
		}

		if !slices.Equal(crt.ExtKeyUsage, tc.eku) {
			t.Errorf("%s: EKU %v, want %v", tc.crt, crt.ExtKeyUsage, tc.eku)
		}

		for _, usage := range tc.eku {
			if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("%s: does not verify for %v: %v", tc.crt, usage, err)
			}
		}

		if !tc.sans {
			continue
		}

		var ips []string
		for _, ip := range crt.IPAddresses {
			ips = append(ips, ip.String())
		}

		if !slices.Equal(ips, wantIPs) || !slices.Equal(crt.DNSNames, wantDNS) {
			t.Errorf("%s: SANs %v %v, want %v %v", tc.crt, ips, crt.DNSNames, wantIPs, wantDNS)
		}

		if err := crt.VerifyHostname("10.5.0.2"); err != nil {
			t.Errorf("%s: %v", tc.crt, err)
		}
	}

	// Rewriting replaces the files and keeps the modes (a restart).
	if err := WriteCerts(o); err != nil {
		t.Fatal(err)
	}

	if _, err := ClientTLSConfig(dir); err != nil {
		t.Fatal(err)
	}

	if err := WriteCerts(Options{Name: "x", PKIDir: dir, CA: &pki.CertAndKey{Crt: ca.Crt}}); err == nil {
		t.Fatal("a CA without its key was accepted")
	}
}
