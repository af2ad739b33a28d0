package configs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

// rtCA is a self-signed CA certificate, PEM-encoded.
func rtCA(t *testing.T, name string) string {
	t.Helper()

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}

	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func rtTrustedRoots(name, certs string) string {
	return "apiVersion: v1alpha1\nkind: TrustedRootsConfig\nname: " + name + "\ncertificates: |\n  " +
		strings.ReplaceAll(strings.TrimRight(certs, "\n"), "\n", "\n  ") + "\n"
}

func TestTrustedRootsConfig(t *testing.T) {
	t.Parallel()

	ca1, ca2 := rtCA(t, "one"), rtCA(t, "two")

	rtRun(t, []rtCase{
		{name: "two documents, in the bundle in order", docs: rtTrustedRoots("enterprise", ca1+ca2) + "---\n" + rtTrustedRoots("lab", ca2),
			check: func(t *testing.T, cfg *configs.Config) {
				want := "\nenterprise:\n===========\n" + ca1 + ca2 + "\nlab:\n====\n" + ca2
				if got := string(configs.TrustedRootsBundle(cfg)); got != want {
					t.Errorf("bundle:\n%s\nwant:\n%s", got, want)
				}
			}},
		{name: "comments between the certificates", docs: rtTrustedRoots("enterprise", "# issuer: one\n"+ca1+"# issuer: two\n"+ca2)},
		{name: "no name", docs: "apiVersion: v1alpha1\nkind: TrustedRootsConfig\ncertificates: |\n  " + strings.ReplaceAll(strings.TrimSpace(ca1), "\n", "\n  ") + "\n",
			errs: []string{`TrustedRootsConfig[""].name: name is required`}},
		{name: "no certificates", docs: "apiVersion: v1alpha1\nkind: TrustedRootsConfig\nname: x\n",
			errs: []string{`TrustedRootsConfig["x"].certificates: certificates are required`}},
		{name: "not PEM", docs: rtTrustedRoots("x", "MIIBxTCCAWugAwIBAgIQ"), errs: []string{`TrustedRootsConfig["x"].certificates: certificates hold no PEM block`}},
		{name: "a key", docs: rtTrustedRoots("x", ca1+"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"),
			errs: []string{`TrustedRootsConfig["x"].certificates: certificates: PEM block 2 is a EC PRIVATE KEY, not a CERTIFICATE`}},
		{name: "a certificate that does not parse", docs: rtTrustedRoots("x", "-----BEGIN CERTIFICATE-----\nMIIBxTCC\n-----END CERTIFICATE-----\n"),
			errs: []string{`TrustedRootsConfig["x"].certificates: certificates: certificate 1 does not parse`}},
		{name: "an unknown field", docs: rtTrustedRoots("x", ca1) + "ca: x\n", decodeErr: `unknown field "ca"`},
		{name: "a wrong type", docs: "apiVersion: v1alpha1\nkind: TrustedRootsConfig\nname: x\ncertificates: [a]\n", decodeErr: `TrustedRootsConfig["x"].certificates: expected a single value`},
		{name: "one document per name", docs: rtTrustedRoots("x", ca1) + "---\n" + rtTrustedRoots("x", ca2), decodeErr: `duplicate document TrustedRootsConfig "x"`},
	})

	t.Run("no document, no bundle", func(t *testing.T) {
		t.Parallel()

		if b := configs.TrustedRootsBundle(rtDecode(t, rtBase(t))); b != nil {
			t.Errorf("bundle %q", b)
		}
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, rtTrustedRoots("enterprise", ca1+ca2))
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", rtTrustedRoots("enterprise", ca2)},
			{"json", `[{"op": "replace", "path": "/TrustedRootsConfig/enterprise/certificates", "value": ` + strings.ReplaceAll(strings.ReplaceAll(`"`+ca2+`"`, "\n", `\n`), `\n"`, `\n"`) + `}]`},
		} {
			if got := string(configs.TrustedRootsBundle(rtPatched(t, rtTrustedRoots("enterprise", ca1), p.patch))); got != "\nenterprise:\n===========\n"+ca2 {
				t.Errorf("%s: bundle\n%s", p.name, got)
			}
		}
	})

	// The bundle is read by the processes that use it when they start.
	t.Run("changes need a reboot", func(t *testing.T) {
		t.Parallel()

		if live, ok := configs.DocumentChangeLive(`TrustedRootsConfig["x"]`); !ok || live {
			t.Errorf("DocumentChangeLive = %t, %t", live, ok)
		}
	})
}
