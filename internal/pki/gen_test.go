package pki

import (
	"crypto/rsa"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func assertMode0600(t *testing.T, paths ...string) {
	t.Helper()

	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}

		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", p, fi.Mode().Perm())
		}
	}
}

// TestGenAdminFlow follows the "Managing PKI" recipe: gen ca, gen key,
// gen csr --ip, gen crt --ca --csr --name, then checks the admin
// certificate chains to the CA and is a client certificate.
func TestGenAdminFlow(t *testing.T) {
	dir := t.TempDir()
	now := func() time.Time { return fixedNow }

	caFiles, err := GenCA(GenCAOptions{Dir: dir, Organization: "ca", Hours: 1000, Now: now})
	if err != nil {
		t.Fatal(err)
	}

	wantCA := []string{filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.sha256"), filepath.Join(dir, "ca.key")}
	if !slices.Equal(caFiles, wantCA) {
		t.Fatalf("gen ca wrote %v, want %v", caFiles, wantCA)
	}

	assertMode0600(t, caFiles...)

	ca, err := ReadCertAndKey(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}

	caCrt := mustCert(t, *ca)
	if caCrt.NotAfter.Sub(fixedNow) != 1000*time.Hour || !slices.Equal(caCrt.Subject.Organization, []string{"ca"}) {
		t.Errorf("CA: NotAfter-now=%v O=%v", caCrt.NotAfter.Sub(fixedNow), caCrt.Subject.Organization)
	}

	pin, _ := os.ReadFile(filepath.Join(dir, "ca.sha256"))
	if string(pin) != SPKIHash(caCrt) || !strings.HasPrefix(string(pin), "sha256:") || len(pin) != 7+64 {
		t.Errorf("ca.sha256 = %q, want %q", pin, SPKIHash(caCrt))
	}

	keyPath, err := GenKey(dir, "admin")
	if err != nil {
		t.Fatal(err)
	}

	csrPath, err := GenCSR(GenCSROptions{Key: keyPath, IPs: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}

	if csrPath != filepath.Join(dir, "admin.csr") {
		t.Errorf("csr path = %s", csrPath)
	}

	crtPath, err := GenCrt(GenCrtOptions{Dir: dir, CA: filepath.Join(dir, "ca"), CSR: csrPath, Name: "admin", Now: now})
	if err != nil {
		t.Fatal(err)
	}

	assertMode0600(t, keyPath, csrPath, crtPath)

	admin, err := ReadCertAndKey(filepath.Join(dir, "admin"))
	if err != nil {
		t.Fatalf("admin.crt/admin.key: %v", err)
	}

	crt := mustCert(t, *admin)
	verifyChain(t, crt, ca.Crt, x509.ExtKeyUsageClientAuth)

	if !slices.Equal(crt.Subject.Organization, []string{"os:admin"}) || !crt.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("admin cert O=%v IPs=%v", crt.Subject.Organization, crt.IPAddresses)
	}

	if crt.NotAfter.Sub(fixedNow) != 24*time.Hour {
		t.Errorf("default gen crt lifetime = %v, want 24h", crt.NotAfter.Sub(fixedNow))
	}

	// Renewing (the second recipe) writes a new CSR/crt for the same key,
	// so the old files must be moved away first: gen never overwrites.
	if _, err := GenCrt(GenCrtOptions{Dir: dir, CA: filepath.Join(dir, "ca"), CSR: csrPath, Name: "admin"}); err == nil ||
		!strings.Contains(err.Error(), "already exists") {
		t.Errorf("overwriting admin.crt: %v", err)
	}
}

func TestGenErrors(t *testing.T) {
	dir := t.TempDir()

	if _, err := GenKey(dir, "k"); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, "clash.key"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"ca without organization", func() error { _, err := GenCA(GenCAOptions{Dir: dir}); return err }, "organization is required"},
		{"ca clobbers key", func() error {
			_, err := GenCA(GenCAOptions{Dir: dir, Organization: "clash"})
			return err
		}, "already exists"},
		{"key twice", func() error { _, err := GenKey(dir, "k"); return err }, "already exists"},
		{"csr without ip", func() error { _, err := GenCSR(GenCSROptions{Key: filepath.Join(dir, "k.key")}); return err }, "at least one IP"},
		{"csr bad ip", func() error {
			_, err := GenCSR(GenCSROptions{Key: filepath.Join(dir, "k.key"), IPs: []string{"300.1.1.1"}})
			return err
		}, `invalid IP address "300.1.1.1"`},
		{"csr missing key", func() error {
			_, err := GenCSR(GenCSROptions{Key: filepath.Join(dir, "none.key"), IPs: []string{"1.2.3.4"}})
			return err
		}, "read key"},
		{"crt missing ca", func() error {
			_, err := GenCrt(GenCrtOptions{Dir: dir, CA: filepath.Join(dir, "none"), CSR: "x", Name: "y"})
			return err
		}, "read certificate"},
		{"keypair bad ip", func() error {
			_, err := GenKeypair(GenKeypairOptions{Dir: dir, Organization: "kp", IP: "nope"})
			return err
		}, "invalid IP"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}

	if data, _ := os.ReadFile(filepath.Join(dir, "clash.key")); string(data) != "keep" {
		t.Error("existing file was overwritten")
	}

	if _, err := os.Stat(filepath.Join(dir, "clash.crt")); err == nil {
		t.Error("gen ca wrote part of its files despite the clash")
	}
}

func TestGenKeypair(t *testing.T) {
	dir := t.TempDir()

	files, err := GenKeypair(GenKeypairOptions{Dir: dir, Organization: "node", IP: "10.5.0.2", Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}

	if !slices.Equal(files, []string{filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")}) {
		t.Errorf("files = %v", files)
	}

	pair, err := ReadCertAndKey(filepath.Join(dir, "node"))
	if err != nil {
		t.Fatal(err)
	}

	crt := mustCert(t, *pair)
	if !crt.IsCA || crt.VerifyHostname("10.5.0.2") != nil || crt.NotAfter.Sub(fixedNow) != 24*time.Hour {
		t.Errorf("keypair: IsCA=%v IPs=%v lifetime=%v", crt.IsCA, crt.IPAddresses, crt.NotAfter.Sub(fixedNow))
	}
}

func TestGenCARSA(t *testing.T) {
	dir := t.TempDir()

	if _, err := GenCA(GenCAOptions{Dir: dir, Organization: "rsa", RSA: true}); err != nil {
		t.Fatal(err)
	}

	pair, err := ReadCertAndKey(filepath.Join(dir, "rsa"))
	if err != nil {
		t.Fatal(err)
	}

	crt := mustCert(t, *pair)

	pub, ok := crt.PublicKey.(*rsa.PublicKey)
	if !ok || pub.N.BitLen() != 4096 {
		t.Fatalf("public key %T, want RSA 4096", crt.PublicKey)
	}

	if crt.KeyUsage&x509.KeyUsageKeyEncipherment == 0 {
		t.Error("RSA CA lacks KeyEncipherment")
	}

	if !strings.Contains(string(pair.Key), "BEGIN RSA PRIVATE KEY") {
		t.Error("RSA key not in PKCS#1 PEM")
	}
}

func TestReadCA(t *testing.T) {
	dir := t.TempDir()

	ca, err := NewCA(CAOptions{Organization: "talos", KeyType: ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	other, err := NewCA(CAOptions{Organization: "other", KeyType: ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	leaf, err := NewServerCertificate(ca, ServerOptions{DNSNames: []string{"node"}})
	if err != nil {
		t.Fatal(err)
	}

	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}

		return p
	}

	caCrt, caKey := write("ca.crt", ca.Crt), write("ca.key", ca.Key)

	for _, tt := range []struct {
		name, crt, key, want string
	}{
		{"matching pair", caCrt, caKey, ""},
		{"missing certificate", filepath.Join(dir, "nope.crt"), caKey, "read CA certificate: open " + filepath.Join(dir, "nope.crt")},
		{"missing key", caCrt, filepath.Join(dir, "nope.key"), "read CA key: open"},
		{"empty key", caCrt, write("empty.key", nil), "empty.key is empty"},
		{"key of another CA", caCrt, write("other.key", other.Key), ErrKeyMismatch.Error()},
		{"not a CA", write("leaf.crt", leaf.Crt), write("leaf.key", leaf.Key), "leaf.crt is not a certificate authority"},
		{"not PEM", write("junk.crt", []byte("junk")), caKey, "junk.crt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCA(tt.crt, tt.key)

			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("ReadCA: %v", err)
			case tt.want == "" && string(got.Key) != string(ca.Key):
				t.Fatal("ReadCA returned another key")
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("ReadCA error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
