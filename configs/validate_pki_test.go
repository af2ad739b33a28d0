package configs_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// testCert is a certificate and its key, as base64 of PEM the way a
// config carries them, made now: certificates with fixed dates would
// start failing the day they expire.
type testCert struct{ crt, key string }

type certSpec struct {
	key       crypto.Signer // the certificate's key; Ed25519 when nil
	notBefore time.Time     // an hour ago when zero
	notAfter  time.Time     // in a year when zero
	isCA      bool
}

// makeCert issues spec's certificate, self-signed; a key Go will not sign
// with (RSA below 1024 bits) is certified by another key instead, which
// the checks under test do not look at.
func makeCert(t *testing.T, spec certSpec) testCert {
	t.Helper()

	if spec.key == nil {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}

		spec.key = k
	}

	now := time.Now()
	if spec.notBefore.IsZero() {
		spec.notBefore = now.Add(-time.Hour)
	}

	if spec.notAfter.IsZero() {
		spec.notAfter = now.AddDate(1, 0, 0)
	}

	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "test", Organization: []string{"test"}},
		NotBefore: spec.notBefore, NotAfter: spec.notAfter,
		BasicConstraintsValid: true, IsCA: spec.isCA, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}

	signer := spec.key
	if k, ok := spec.key.(*rsa.PrivateKey); ok && k.N.BitLen() < 1024 {
		_, signer, _ = ed25519.GenerateKey(rand.Reader) //nolint:errcheck // crypto/rand does not fail
	}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, spec.key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}

	keyDER, err := x509.MarshalPKCS8PrivateKey(spec.key)
	if err != nil {
		t.Fatal(err)
	}

	return testCert{
		crt: b64PEM("CERTIFICATE", der),
		key: b64PEM("PRIVATE KEY", keyDER),
	}
}

func b64PEM(typ string, der []byte) string {
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// weakRSAKey is a 512-bit RSA key, made by hand: crypto/rsa refuses to
// generate one.
func weakRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()

	for {
		p, err := rand.Prime(rand.Reader, 256)
		if err != nil {
			t.Fatal(err)
		}

		q, err := rand.Prime(rand.Reader, 256)
		if err != nil {
			t.Fatal(err)
		}

		one := big.NewInt(1)
		phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))

		d := new(big.Int).ModInverse(big.NewInt(65537), phi)
		if d == nil || p.Cmp(q) == 0 {
			continue
		}

		k := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: new(big.Int).Mul(p, q), E: 65537}, D: d, Primes: []*big.Int{p, q}}
		k.Precompute()

		return k
	}
}

func ecKey(t *testing.T, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()

	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	return k
}

func rsaKey(t *testing.T, bits int) *rsa.PrivateKey {
	t.Helper()

	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}

	return k
}

// TestValidateCertificates: every CA and certificate of the config is
// checked as Go's TLS and Kubernetes take it: validity dates against the
// clock (an error for a CA the node signs with, a warning for one it only
// trusts), RSA keys of 2048 bits or more, ECDSA on P-256, P-384 or P-521.
func TestValidateCertificates(t *testing.T) {
	t.Parallel()

	now := time.Now()
	expired := makeCert(t, certSpec{isCA: true, notBefore: now.AddDate(-2, 0, 0), notAfter: now.AddDate(0, 0, -1)})
	future := makeCert(t, certSpec{isCA: true, key: ecKey(t, elliptic.P256()), notBefore: now.AddDate(4, 0, 0), notAfter: now.AddDate(14, 0, 0)})
	rsa512 := makeCert(t, certSpec{isCA: true, key: weakRSAKey(t)})
	rsa1024 := makeCert(t, certSpec{key: rsaKey(t, 1024)})
	p224 := makeCert(t, certSpec{isCA: true, key: ecKey(t, elliptic.P224())})
	p384 := makeCert(t, certSpec{isCA: true, key: ecKey(t, elliptic.P384())})
	rsa2048 := makeCert(t, certSpec{isCA: true, key: rsaKey(t, 2048)})
	leafExpired := makeCert(t, certSpec{notBefore: now.AddDate(0, -2, 0), notAfter: now.AddDate(0, -1, 0)})
	saP224 := makeCert(t, certSpec{key: ecKey(t, elliptic.P224())})

	date := func(d time.Time) string { return d.UTC().Truncate(time.Second).Format(time.RFC3339) }
	// The dates makeCert gave, to second precision as a certificate has.
	yesterday, in4Years := date(now.AddDate(0, 0, -1)), date(now.AddDate(4, 0, 0))
	lastMonth := date(now.AddDate(0, -1, 0))

	runValidateCases(t, []validateCase{
		{
			name:  "an expired machine CA the node signs with",
			patch: `machine: {ca: {crt: ` + expired.crt + `, key: ` + expired.key + `}}`,
			wantErrs: []string{
				`machine.ca.crt: the certificate expired on ` + yesterday + `: nothing the node issues with it would be trusted; replace the CA (talosctl rotate-ca)`,
			},
		},
		{
			name:  "an etcd CA not valid for four years",
			patch: `cluster: {etcd: {ca: {crt: ` + future.crt + `, key: ` + future.key + `}}}`,
			wantErrs: []string{
				`cluster.etcd.ca.crt: the certificate is not valid until ` + in4Years + `: nothing the node issues with it would be trusted; replace the CA (talosctl rotate-ca)`,
			},
		},
		{
			name:  "a 512-bit RSA cluster CA",
			patch: `cluster: {ca: {crt: ` + rsa512.crt + `, key: ` + rsa512.key + `}}`,
			wantErrs: []string{
				`cluster.ca.crt: the certificate's key is an RSA key of 512 bits: at least 2048 are required`,
			},
		},
		{
			name:  "a P-224 aggregator CA, a P-224 service account key",
			patch: `cluster: {aggregatorCA: {crt: ` + p224.crt + `, key: ` + p224.key + `}, serviceAccount: {key: ` + saP224.key + `}}`,
			wantErrs: []string{
				`cluster.aggregatorCA.crt: the certificate's key is an ECDSA key on curve P-224: Go's TLS and Kubernetes take P-256, P-384 and P-521 only`,
				`cluster.serviceAccount.key: the service account key is an ECDSA key on curve P-224: Go's TLS and Kubernetes take P-256, P-384 and P-521 only`,
			},
		},
		{
			name:  "RSA 2048 and P-384 CAs are fine",
			patch: `cluster: {ca: {crt: ` + rsa2048.crt + `, key: ` + rsa2048.key + `}, etcd: {ca: {crt: ` + p384.crt + `, key: ` + p384.key + `}}}`,
		},
		{
			name:  "an expired CA that is only trusted is a warning",
			patch: `{machine: {acceptedCAs: [{crt: ` + expired.crt + `}]}, cluster: {acceptedCAs: [{crt: ` + future.crt + `}]}}`,
			wantWarns: []string{
				`machine.acceptedCAs[0].crt: the certificate expired on ` + yesterday + `: TLS does not accept it now`,
				`cluster.acceptedCAs[0].crt: the certificate is not valid until ` + in4Years + `: TLS does not accept it now`,
			},
		},
		{
			name:  "a worker's expired machine CA is a warning: it signs nothing",
			base:  "worker",
			patch: `machine: {ca: {crt: ` + expired.crt + `}}`,
			wantWarns: []string{
				`machine.ca.crt: the certificate expired on ` + yesterday + `: TLS does not accept it now`,
			},
		},
		{
			name:  "a trusted CA's key is held to the same sizes",
			patch: `machine: {acceptedCAs: [{crt: ` + rsa512.crt + `}]}`,
			wantErrs: []string{
				`machine.acceptedCAs[0].crt: the certificate's key is an RSA key of 512 bits: at least 2048 are required`,
			},
		},
		{
			name: "registry client identities",
			patch: `machine: {registries: {config: {
				a.example.com: {tls: {clientIdentity: {crt: ` + rsa1024.crt + `, key: ` + rsa1024.key + `}}},
				b.example.com: {tls: {clientIdentity: {crt: ` + leafExpired.crt + `, key: ` + leafExpired.key + `}}},
				c.example.com: {tls: {clientIdentity: {crt: ` + rsa2048.crt + `, key: ` + expired.key + `}}}}}}`,
			wantErrs: []string{
				`machine.registries.config["a.example.com"].tls.clientIdentity.crt: the certificate's key is an RSA key of 1024 bits: at least 2048 are required`,
				`machine.registries.config["c.example.com"].tls.clientIdentity.key: the private key does not belong to the certificate in .machine.registries.config["c.example.com"].tls.clientIdentity.crt`,
			},
			wantWarns: []string{
				`machine.registries.config["b.example.com"].tls.clientIdentity.crt: the certificate expired on ` + lastMonth + `: TLS does not accept it now`,
			},
		},
	})
}
