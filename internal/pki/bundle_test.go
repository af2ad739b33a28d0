package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestBundle(t testing.TB) *Bundle {
	t.Helper()

	b, err := NewBundle(BundleOptions{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatalf("NewBundle: %v", err)
	}

	return b
}

func mustCert(t testing.TB, pair CertAndKey) *x509.Certificate {
	t.Helper()

	crt, err := pair.Certificate()
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}

	return crt
}

func TestNewBundleCAs(t *testing.T) {
	b := newTestBundle(t)

	tests := []struct {
		name    string
		pair    CertAndKey
		org     []string
		cn      string
		keyType string
	}{
		{"os", b.Certs.OS, []string{"talos"}, "", "ed25519"},
		{"k8s", b.Certs.K8s, []string{"kubernetes"}, "", "p256"},
		{"k8saggregator", b.Certs.K8sAggregator, nil, "front-proxy", "p256"},
		{"etcd", b.Certs.Etcd, []string{"etcd"}, "", "p256"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crt := mustCert(t, tt.pair)

			if !crt.IsCA || !crt.BasicConstraintsValid {
				t.Errorf("IsCA=%v BasicConstraintsValid=%v, want both true", crt.IsCA, crt.BasicConstraintsValid)
			}

			if want := x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature; crt.KeyUsage&want != want {
				t.Errorf("KeyUsage = %b, want CertSign|DigitalSignature", crt.KeyUsage)
			}

			if !slices.Equal(crt.Subject.Organization, tt.org) || crt.Subject.CommonName != tt.cn {
				t.Errorf("subject = %v, want O=%v CN=%q", crt.Subject, tt.org, tt.cn)
			}

			if got := crt.NotAfter.Sub(fixedNow); got != 87600*time.Hour {
				t.Errorf("NotAfter - now = %v, want 87600h", got)
			}

			if crt.NotBefore.After(fixedNow) {
				t.Errorf("NotBefore %v is after issue time %v", crt.NotBefore, fixedNow)
			}

			if err := crt.CheckSignatureFrom(crt); err != nil {
				t.Errorf("not self-signed: %v", err)
			}

			switch pub := crt.PublicKey.(type) {
			case ed25519.PublicKey:
				if tt.keyType != "ed25519" {
					t.Errorf("key type ed25519, want %s", tt.keyType)
				}
			case *ecdsa.PublicKey:
				if tt.keyType != "p256" || pub.Curve != elliptic.P256() {
					t.Errorf("key type ecdsa %v, want %s", pub.Curve.Params().Name, tt.keyType)
				}
			default:
				t.Errorf("unexpected key type %T", pub)
			}

			if err := tt.pair.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestNewBundleSecrets(t *testing.T) {
	b := newTestBundle(t)
	token := regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

	for name, tok := range map[string]string{"bootstrap": b.Secrets.BootstrapToken, "trustd": b.TrustdInfo.Token} {
		if !token.MatchString(tok) {
			t.Errorf("%s token %q does not match %s", name, tok, token)
		}
	}

	if b.Secrets.BootstrapToken == b.TrustdInfo.Token {
		t.Error("bootstrap and trustd tokens are equal")
	}

	for name, s := range map[string]string{
		"cluster.id": b.Cluster.ID, "cluster.secret": b.Cluster.Secret, "secretbox": b.Secrets.SecretboxEncryptionSecret,
	} {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != 32 {
			t.Errorf("%s = %q: want base64 of 32 bytes (err %v, len %d)", name, s, err, len(raw))
		}
	}

	sa, err := ParsePrivateKeyPEM(b.Certs.K8sServiceAccount.Key)
	if err != nil {
		t.Fatalf("service account key: %v", err)
	}

	if k, ok := sa.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("service account key is %T, want ECDSA P-256", sa)
	}

	if err := b.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestNewTokenDistribution(t *testing.T) {
	seen := map[string]bool{}
	chars := map[rune]bool{}

	for range 200 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}

		if !ValidToken(tok) {
			t.Fatalf("invalid token %q", tok)
		}

		if seen[tok] {
			t.Fatalf("duplicate token %q", tok)
		}

		seen[tok] = true

		for _, c := range strings.ReplaceAll(tok, ".", "") {
			chars[c] = true
		}
	}

	// 200*22 draws over 36 symbols: every symbol shows up unless the
	// generator is broken (for example only ever producing letters).
	if len(chars) != len(tokenAlphabet) {
		t.Errorf("tokens used %d distinct characters, want %d", len(chars), len(tokenAlphabet))
	}
}

func TestBundleYAMLRoundTrip(t *testing.T) {
	b := newTestBundle(t)
	b.Secrets.AESCBCEncryptionSecret = "c2VjcmV0"

	data, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}

	wantKeys := []string{
		"cluster:", "    id: ", "    secret: ", "secrets:", "    bootstraptoken: ", "    aescbcencryptionsecret: ",
		"    secretboxencryptionsecret: ", "trustdinfo:", "    token: ", "certs:", "    etcd:", "        crt: ",
		"        key: ", "    k8s:", "    k8saggregator:", "    k8sserviceaccount:", "    os:",
	}

	lines := strings.Split(string(data), "\n")
	pos := 0

	for _, want := range wantKeys {
		for pos < len(lines) && !strings.HasPrefix(lines[pos], want) {
			pos++
		}

		if pos == len(lines) {
			t.Fatalf("secrets.yaml lacks %q in Talos order:\n%s", want, data)
		}
	}

	if bytes.Contains(data, []byte("!!binary")) || bytes.Contains(data, []byte("BEGIN")) {
		t.Errorf("PEM must be stored as plain base64 strings:\n%s", data)
	}

	got, err := ParseBundle(data)
	if err != nil {
		t.Fatalf("ParseBundle: %v", err)
	}

	again, err := got.Marshal()
	if err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(data, again) {
		t.Errorf("round trip changed the document:\n%s\n---\n%s", data, again)
	}

	if !bytes.Equal(got.Certs.OS.Key, b.Certs.OS.Key) || got.TrustdInfo.Token != b.TrustdInfo.Token {
		t.Error("round trip lost data")
	}
}

func TestParseBundleErrors(t *testing.T) {
	b := newTestBundle(t)
	other := newTestBundle(t)

	marshal := func(mut func(*Bundle)) string {
		c := *b
		mut(&c)

		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}

		return string(data)
	}

	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"empty", "", []string{"document is empty"}},
		{"unknown field", marshal(func(*Bundle) {}) + "extra: 1\n", []string{"line", "field extra not found"}},
		{"unknown nested field", strings.Replace(marshal(func(*Bundle) {}), "    token:", "    tokne:", 1),
			[]string{"line 8", "field tokne not found"}},
		{"bad base64", strings.Replace(marshal(func(*Bundle) {}), "    k8sserviceaccount:\n        key: ",
			"    k8sserviceaccount:\n        key: '!!!'\n        x: ", 1), []string{"invalid base64"}},
		{"missing CA", marshal(func(c *Bundle) { c.Certs.Etcd = CertAndKey{} }), []string{"certs.etcd: CA certificate is missing"}},
		{"missing CA key", marshal(func(c *Bundle) { c.Certs.OS.Key = nil }), []string{"certs.os: CA key is missing"}},
		{"mismatched key", marshal(func(c *Bundle) { c.Certs.K8s.Key = other.Certs.K8s.Key }),
			[]string{"certs.k8s: private key does not match certificate"}},
		{"not a CA", marshal(func(c *Bundle) {
			leaf, err := c.AdminCertificate(nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			c.Certs.OS = *leaf
		}), []string{"certs.os: certificate is not a CA"}},
		{"bad tokens", marshal(func(c *Bundle) { c.Secrets.BootstrapToken = "ABCDEF.0123456789abcdef"; c.TrustdInfo.Token = "x" }),
			[]string{"secrets.bootstraptoken: invalid token", "trustdinfo.token: invalid token"}},
		{"missing sa key", marshal(func(c *Bundle) { c.Certs.K8sServiceAccount.Key = nil }), []string{"certs.k8sserviceaccount.key: is missing"}},
		{"garbage sa key", marshal(func(c *Bundle) { c.Certs.K8sServiceAccount.Key = []byte("nope") }),
			[]string{"certs.k8sserviceaccount.key: parse private key: no PEM block"}},
		{"short secretbox", marshal(func(c *Bundle) { c.Secrets.SecretboxEncryptionSecret = "c2hvcnQ=" }),
			[]string{"secretboxencryptionsecret: want base64 of 32 bytes"}},
		{"missing cluster", marshal(func(c *Bundle) { c.Cluster.ID, c.Cluster.Secret = "", "" }),
			[]string{"cluster.id: is missing", "cluster.secret: is missing"}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBundle([]byte(tt.doc))
			if err == nil {
				t.Fatal("ParseBundle succeeded, want error")
			}

			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSaveLoadBundle(t *testing.T) {
	b := newTestBundle(t)
	path := filepath.Join(t.TempDir(), "secrets.yaml")

	if err := SaveBundle(path, b); err != nil {
		t.Fatal(err)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}

	got, err := LoadBundle(path)
	if err != nil {
		t.Fatal(err)
	}

	if got.Cluster.Secret != b.Cluster.Secret || !bytes.Equal(got.Certs.Etcd.Crt, b.Certs.Etcd.Crt) {
		t.Error("loaded bundle differs from saved one")
	}

	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}

	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only secrets.yaml (temp file left behind?)", len(entries))
	}

	if _, err := LoadBundle(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("LoadBundle of a missing file succeeded")
	}
}

func BenchmarkNewBundle(b *testing.B) {
	for b.Loop() {
		if _, err := NewBundle(BundleOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
