package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/pki"
)

// File names inside Options.PKIDir (as in Talos' /system/secrets/etcd).
const (
	CACertFile     = "ca.crt"
	PeerCertFile   = "peer.crt"
	PeerKeyFile    = "peer.key"
	ServerCertFile = "server.crt"
	ServerKeyFile  = "server.key"
	// The admin pair is a client-only certificate: this node uses it to
	// reach other members' client port while it joins.
	AdminCertFile = "admin.crt"
	AdminKeyFile  = "admin.key"
)

// certValidity is a year, like Talos' etcd certificates. etcd rereads its
// certificate files on every handshake, and Start reissues them, so a
// member restarted within the year never serves an expired one.
const certValidity = 365 * 24 * time.Hour

// WriteCerts issues this member's certificates from opts.CA into opts.PKIDir
// (0700; files 0600, each replaced atomically): the CA certificate, a peer
// and a server certificate, and an admin client certificate.
//
// The peer and server certificates carry both server and client
// authentication: a member presents its peer certificate when it dials
// other members, and etcd's gRPC gateway dials the member's own client port
// with the server certificate. Their SANs are opts.IPs, the hosts of the
// advertised URLs, 127.0.0.1, ::1, opts.Name, opts.DNSNames and localhost.
// Start calls it, so certificates follow address changes on restart.
func WriteCerts(opts Options) error {
	if opts.PKIDir == "" {
		return errors.New("etcd certificates: PKI dir is required")
	}

	if opts.CA == nil || len(opts.CA.Key) == 0 {
		return errors.New("etcd certificates: the etcd CA with its key is required")
	}

	if opts.Name == "" {
		return errors.New("etcd certificates: member name is required")
	}

	if err := os.MkdirAll(opts.PKIDir, 0o700); err != nil {
		return fmt.Errorf("etcd certificates: %w", err)
	}

	// MkdirAll keeps the mode of an existing dir; keys must not be listable.
	if err := os.Chmod(opts.PKIDir, 0o700); err != nil {
		return fmt.Errorf("etcd certificates: %w", err)
	}

	ips, dns := certSANs(opts)
	dual := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

	files := []struct {
		crt, key string
		csr      pki.CSROptions
		eku      []x509.ExtKeyUsage
	}{
		{PeerCertFile, PeerKeyFile, pki.CSROptions{CommonName: opts.Name, IPs: ips, DNSNames: dns}, dual},
		{ServerCertFile, ServerKeyFile, pki.CSROptions{CommonName: opts.Name, IPs: ips, DNSNames: dns}, dual},
		{AdminCertFile, AdminKeyFile, pki.CSROptions{CommonName: "talosbox:" + opts.Name}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	}

	if err := writePKIFile(opts.PKIDir, CACertFile, opts.CA.Crt); err != nil {
		return err
	}

	for _, f := range files {
		pair, err := issue(opts.CA, f.csr, f.eku)
		if err != nil {
			return fmt.Errorf("etcd certificates: %s: %w", f.crt, err)
		}

		// Key first: a reader that sees the new certificate must find its key.
		if err := writePKIFile(opts.PKIDir, f.key, pair.Key); err != nil {
			return err
		}

		if err := writePKIFile(opts.PKIDir, f.crt, pair.Crt); err != nil {
			return err
		}
	}

	return nil
}

// issue makes a key and has the CA sign a certificate for it. It goes
// through a CSR because pki.SignCSR is the one issuer that takes any set of
// extended key usages.
func issue(ca *pki.CertAndKey, csrOpts pki.CSROptions, eku []x509.ExtKeyUsage) (*pki.CertAndKey, error) {
	key, err := pki.GenerateKeyPEM(pki.ECDSAP256)
	if err != nil {
		return nil, err
	}

	csr, err := pki.NewCSR(key, csrOpts)
	if err != nil {
		return nil, err
	}

	crt, err := pki.SignCSR(ca, csr, pki.SignOptions{TTL: certValidity, ExtKeyUsage: eku})
	if err != nil {
		return nil, err
	}

	return &pki.CertAndKey{Crt: crt, Key: key}, nil
}

func writePKIFile(dir, name string, data []byte) error {
	if err := atomicfile.Write(filepath.Join(dir, name), data, 0o600); err != nil {
		return fmt.Errorf("etcd certificates: %w", err)
	}

	return nil
}

// certSANs lists the SANs of the peer and server certificates.
func certSANs(opts Options) ([]net.IP, []string) {
	seenIP := map[netip.Addr]bool{}

	var ips []net.IP

	addIP := func(a netip.Addr) {
		a = a.Unmap()
		if !a.IsValid() || seenIP[a] {
			return
		}

		seenIP[a] = true
		ips = append(ips, net.IP(a.AsSlice()))
	}

	seenDNS := map[string]bool{}

	var dns []string

	addDNS := func(s string) {
		if s == "" || seenDNS[s] {
			return
		}

		seenDNS[s] = true
		dns = append(dns, s)
	}

	for _, a := range opts.IPs {
		addIP(a)
	}

	// Advertised hosts too, so explicit URLs cannot disagree with the SANs.
	for _, list := range [][]string{opts.AdvertisePeerURLs, opts.AdvertiseClientURLs} {
		for _, s := range list {
			u, err := url.Parse(s)
			if err != nil {
				continue
			}

			if a, err := netip.ParseAddr(u.Hostname()); err == nil {
				addIP(a)
			} else {
				addDNS(u.Hostname())
			}
		}
	}

	addIP(netip.MustParseAddr("127.0.0.1"))
	addIP(netip.IPv6Loopback())
	addDNS(opts.Name)

	for _, d := range opts.DNSNames {
		addDNS(d)
	}

	addDNS("localhost")

	return ips, dns
}

// ClientTLSConfig returns the mutual TLS configuration for reaching members'
// client port with the admin certificate WriteCerts put in pkiDir.
func ClientTLSConfig(pkiDir string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, AdminCertFile), filepath.Join(pkiDir, AdminKeyFile))
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}

	caPEM, err := os.ReadFile(filepath.Join(pkiDir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}

	pool, err := pki.CertPool(caPEM)
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}

	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}
