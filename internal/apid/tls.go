package apid

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// certIssuer hands out a certificate and issues a new one when half of
// the current one's life is over (Talos renews apid's 24 h certificates
// every 12 h). Issuing is lazy: it happens on the handshake that needs it.
type certIssuer struct {
	issue func() (*tls.Certificate, error)
	// fetch, on a worker, asks trustd for a certificate (see worker.go).
	fetch func(ctx context.Context, onError func(string, error)) (*pki.CertAndKey, error)

	// covers, when set, says whether a certificate still names every
	// address of the node; one that does not is re-issued (Talos renews
	// whenever the node's addresses change). Checked at most every
	// coverCheckInterval, as it asks the kernel.
	covers func(*x509.Certificate) bool

	// onSet, when set, is told of each certificate installed (the
	// ApiCertificates resource follows it). It runs under mu, so it must
	// not call back into the issuer.
	onSet func(*tls.Certificate)

	mu        sync.Mutex
	cur       *tls.Certificate
	renewAt   time.Time
	checkedAt time.Time
}

// coverCheckInterval spaces the address checks of a serving certificate;
// renewRetry spaces renewals after one failed.
const (
	coverCheckInterval = 5 * time.Second
	renewRetry         = time.Minute
)

func newIssuer(issue func() (*pki.CertAndKey, error)) *certIssuer {
	if issue == nil {
		return &certIssuer{}
	}

	return &certIssuer{issue: func() (*tls.Certificate, error) { return tlsCertificate(issue()) }}
}

// tlsCertificate converts what an issuer made for crypto/tls.
func tlsCertificate(pair *pki.CertAndKey, err error) (*tls.Certificate, error) {
	if err != nil {
		return nil, err
	}

	c, err := pair.TLSCertificate()
	if err != nil {
		return nil, err
	}

	return &c, nil
}

// get returns the current certificate, renewing it when due.
func (ci *certIssuer) get() (*tls.Certificate, error) {
	ci.mu.Lock()
	defer ci.mu.Unlock()

	if now := time.Now(); ci.cur != nil && now.Before(ci.renewAt) {
		if ci.covers == nil || now.Sub(ci.checkedAt) < coverCheckInterval {
			return ci.cur, nil
		}

		ci.checkedAt = now

		if ci.covers(ci.cur.Leaf) {
			return ci.cur, nil
		}
	}

	c, err := ci.issue()
	if err != nil {
		if now := time.Now(); ci.cur != nil && now.Before(ci.cur.Leaf.NotAfter) {
			// Renewal failed (trustd away): the current one still serves,
			// and the next attempt waits, so handshakes do not queue
			// behind a renewal that keeps timing out.
			ci.renewAt = now.Add(renewRetry)
			if ci.renewAt.After(ci.cur.Leaf.NotAfter) {
				ci.renewAt = ci.cur.Leaf.NotAfter
			}
			ci.checkedAt = now

			return ci.cur, nil
		}

		return nil, fmt.Errorf("apid: issue certificate: %w", err)
	}

	ci.setLocked(c)

	return c, nil
}

// set installs a certificate obtained outside a handshake (prefetch).
func (ci *certIssuer) set(c *tls.Certificate) {
	ci.mu.Lock()
	defer ci.mu.Unlock()

	ci.setLocked(c)
}

func (ci *certIssuer) setLocked(c *tls.Certificate) {
	life := c.Leaf.NotAfter.Sub(c.Leaf.NotBefore)
	ci.cur, ci.renewAt = c, c.Leaf.NotBefore.Add(life/2)

	if ci.onSet != nil {
		ci.onSet(c)
	}
}

// ready reports whether a certificate is at hand.
func (ci *certIssuer) ready() bool {
	ci.mu.Lock()
	defer ci.mu.Unlock()

	return ci.cur != nil
}

// newSelfSignedIssuer makes maintenance mode's certificate: there is no CA
// yet, so clients connect with --insecure (no server verification).
func newSelfSignedIssuer(hostname string) *certIssuer {
	return &certIssuer{issue: func() (*tls.Certificate, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}

		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
		if err != nil {
			return nil, err
		}

		now := time.Now()
		tmpl := &x509.Certificate{
			SerialNumber: serial,
			Subject:      pkix.Name{CommonName: hostname, Organization: []string{"talosbox maintenance"}},
			NotBefore:    now.Add(-time.Minute),
			NotAfter:     now.Add(pki.ServerCertValidity),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
			DNSNames:     []string{"localhost", hostname},
		}

		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		if err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}

		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}

		return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
	}}
}

// serverTLS is the listener's TLS config for an identity: TLS 1.3 only;
// mutual with a client-auth-only leaf in normal mode, server-only in
// maintenance mode. The certificate comes from current(), which may be a
// newer identity with the same trust (new SANs) than id.
func serverTLS(id *identity, current func() *identity) *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{"h2"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if cur := current(); cur != nil && cur.trustKey == id.trustKey && cur.server != nil {
				return cur.server.get()
			}

			return id.server.get()
		},
	}

	if id.maintenance {
		cfg.ClientAuth = tls.NoClientCert
		return cfg
	}

	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.ClientCAs = id.trust
	cfg.VerifyConnection = verifyClientLeaf

	return cfg
}

// verifyClientLeaf refuses client certificates whose extended key usage
// is anything but client authentication alone, as Talos does: a server
// certificate (a node's, from trustd) must never pass as a client.
// crypto/tls has already checked the chain and that ClientAuth is present.
func verifyClientLeaf(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("apid: no client certificate")
	}

	leaf := cs.PeerCertificates[0]
	if len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth || len(leaf.UnknownExtKeyUsage) != 0 {
		return fmt.Errorf("apid: client certificate %q must have the client authentication extended key usage only", leaf.Subject.CommonName)
	}

	return nil
}

// clientTLS is the TLS config apid dials other nodes with. It reads the
// current identity at each handshake, so pooled connections keep working
// across a CA rotation: the server is verified against today's trust and
// presented today's os:impersonator certificate.
func clientTLS(current func() *identity, host string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{"h2"},
		// Verification is done below against the current trust pool.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			id := current()
			if id == nil || id.client == nil {
				return nil, errors.New("apid: no os:impersonator certificate (maintenance mode or no CA key)")
			}

			return id.client.get()
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			id := current()
			if id == nil || id.trust == nil {
				return errors.New("apid: no trusted CA to verify the other node with")
			}

			if len(cs.PeerCertificates) == 0 {
				return errors.New("apid: the other node sent no certificate")
			}

			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}

			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				DNSName:       host,
				Roots:         id.trust,
				Intermediates: inter,
				KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})

			return err
		},
	}
}
