// Package clienttest serves a fake node API over real mutual TLS, so the
// client and talosctl can be tested without a node: the same certificates,
// the same `node` metadata routing and per-node answers as apid, with state
// a test sets up directly.
package clienttest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

// PKI is a throwaway OS CA with a server certificate for 127.0.0.1 and an
// admin client certificate.
type PKI struct {
	CA     *pki.CertAndKey
	Server *pki.CertAndKey
	Client *pki.CertAndKey
}

// NewPKI issues the certificates, with roles on the client certificate
// (os:admin when none).
func NewPKI(t testing.TB, roles ...string) *PKI {
	t.Helper()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "talos", CommonName: "test-os-ca"})
	if err != nil {
		t.Fatal(err)
	}

	server, err := pki.NewServerCertificate(ca, pki.ServerOptions{CommonName: "apid", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}

	client, err := pki.NewClientCertificate(ca, pki.ClientOptions{Roles: roles})
	if err != nil {
		t.Fatal(err)
	}

	return &PKI{CA: ca, Server: server, Client: client}
}

// ServerTLS is apid's TLS: 1.3, client certificates from the CA required
// (or, for maintenance mode, not asked for).
func (p *PKI) ServerTLS(t testing.TB, maintenance bool) *tls.Config {
	t.Helper()

	cert, err := p.Server.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}

	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	if maintenance {
		return cfg
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CA.Crt)
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert

	return cfg
}

// Talosconfig writes a talosconfig with one context "test" holding the
// endpoints and nodes, and returns its path.
func (p *PKI) Talosconfig(t testing.TB, endpoints, nodes []string) string {
	t.Helper()

	enc := base64.StdEncoding.EncodeToString
	cfg := &talosconfig.Config{Context: "test", Contexts: map[string]*talosconfig.Context{"test": {
		Endpoints: endpoints, Nodes: nodes,
		CA: enc(p.CA.Crt), Crt: enc(p.Client.Crt), Key: enc(p.Client.Key),
	}}}

	path := filepath.Join(t.TempDir(), "talosconfig")
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}

	return path
}
