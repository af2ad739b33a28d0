package secrets

import (
	"crypto/x509"
	"encoding/pem"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// fixedNow has no sub-second part: certificates store whole seconds, so
// NotBefore/NotAfter can be compared exactly.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testToken     = "abcdef.0123456789abcdef"
	testSecretbox = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // 32 bytes
	testAESCBC    = "AAECAwQFBgcICQoLDA0ODw=="                     // 16 bytes
)

// testCAs are the authorities a test issues from; accepted plays the CA
// being rotated out.
type testCAs struct {
	k8s, aggregator, etcd, accepted *pki.CertAndKey
	saKey                           []byte
}

func newTestCAs(t testing.TB) testCAs {
	t.Helper()

	mk := func(org string) *pki.CertAndKey {
		ca, err := pki.NewCA(pki.CAOptions{Organization: org, KeyType: pki.ECDSAP256, Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Fatalf("NewCA %s: %v", org, err)
		}

		return ca
	}

	sa, err := pki.GenerateKeyPEM(pki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}

	return testCAs{k8s: mk("kubernetes"), aggregator: mk("front-proxy"), etcd: mk("etcd"), accepted: mk("kubernetes-old"), saKey: sa}
}

func testInputs(t testing.TB, cas testCAs) Inputs {
	t.Helper()

	return Inputs{
		ClusterName:               "talos-test",
		Endpoint:                  &url.URL{Scheme: "https", Host: "k8s.example.com:6443"},
		LocalAPIServerPort:        6443,
		CertSANs:                  []string{"10.5.0.100", "lb.example.com", " ", "k8s.example.com"},
		DNSDomain:                 "cluster.local",
		ServiceSubnets:            []string{"10.96.0.0/12", "fd00:10:96::/112"},
		Hostname:                  "cp-1",
		FQDN:                      "cp-1.example.com",
		NodeAddresses:             []netip.Addr{netip.MustParseAddr("172.20.0.2"), netip.MustParseAddr("fd00::2"), netip.MustParseAddr("172.20.0.2")},
		CA:                        cas.k8s,
		AggregatorCA:              cas.aggregator,
		EtcdCA:                    cas.etcd,
		AcceptedCAs:               [][]byte{cas.accepted.Crt},
		ServiceAccountKey:         cas.saKey,
		Token:                     testToken,
		SecretboxEncryptionSecret: testSecretbox,
		Validity:                  DefaultValidity,
		AdminKubeconfigLifetime:   DefaultValidity,
		Now:                       func() time.Time { return fixedNow },
	}
}

func mustCert(t testing.TB, data []byte) *x509.Certificate {
	t.Helper()

	crt, err := pki.ParseCertificatePEM(data)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}

	return crt
}

// pemCount counts the certificates in a bundle.
func pemCount(data []byte) int {
	n := 0

	for {
		var block *pem.Block

		block, data = pem.Decode(data)
		if block == nil {
			return n
		}

		n++
	}
}

// verifyChain checks crt against exactly the roots in rootsPEM for the
// given usage at the fixed test time.
func verifyChain(crt *x509.Certificate, rootsPEM []byte, usage x509.ExtKeyUsage, at time.Time) error {
	roots, err := pki.CertPool(rootsPEM)
	if err != nil {
		return err
	}

	_, err = crt.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}})

	return err
}
