package trustd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/talosbox/talosbox/internal/pki"
)

// ServerOptions describe the server certificate a worker asks trustd for.
type ServerOptions struct {
	CommonName string
	IPs        []net.IP
	DNSNames   []string
	KeyType    pki.KeyType
}

// IssueServerCertificate is a worker's way to its apid certificate: it
// makes a key and a CSR for opts' names, has trustd sign it (Sign, with
// req's endpoints, token and trust; req.CSR is replaced), and checks that
// what came back is a server certificate for that key and those names,
// chaining to req.Trust. The key never leaves the node.
func IssueServerCertificate(ctx context.Context, req SignRequest, opts ServerOptions) (*pki.CertAndKey, error) {
	if len(opts.IPs) == 0 && len(opts.DNSNames) == 0 {
		return nil, errors.New("trustd: server certificate: at least one IP or DNS name is required")
	}

	key, err := pki.GenerateKey(opts.KeyType)
	if err != nil {
		return nil, fmt.Errorf("trustd: server certificate: %w", err)
	}

	keyPEM, err := pki.EncodePrivateKeyPEM(key)
	if err != nil {
		return nil, fmt.Errorf("trustd: server certificate: %w", err)
	}

	req.CSR, err = pki.NewCSR(keyPEM, pki.CSROptions{CommonName: opts.CommonName, IPs: opts.IPs, DNSNames: opts.DNSNames})
	if err != nil {
		return nil, fmt.Errorf("trustd: server certificate: %w", err)
	}

	_, crtPEM, err := Sign(ctx, req)
	if err != nil {
		return nil, err
	}

	pair := &pki.CertAndKey{Crt: crtPEM, Key: keyPEM}
	if err := checkIssued(pair, req.Trust, opts); err != nil {
		return nil, fmt.Errorf("trustd: the issued certificate is unusable: %w", err)
	}

	return pair, nil
}

// checkIssued makes sure a certificate from trustd will work as apid's:
// trustd was verified by TLS, so a mismatch means a bug or a skewed
// clock, better reported here than as failing handshakes later.
func checkIssued(pair *pki.CertAndKey, trust *x509.CertPool, opts ServerOptions) error {
	if err := pair.Validate(); err != nil {
		return err
	}

	crt, err := pair.Certificate()
	if err != nil {
		return err
	}

	if _, err := crt.Verify(x509.VerifyOptions{Roots: trust, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("verify for server authentication: %w", err)
	}

	for _, ip := range opts.IPs {
		if !slices.ContainsFunc(crt.IPAddresses, ip.Equal) {
			return fmt.Errorf("IP %s was asked for but is missing", ip)
		}
	}

	for _, name := range opts.DNSNames {
		if !slices.Contains(crt.DNSNames, name) {
			return fmt.Errorf("DNS name %q was asked for but is missing", name)
		}
	}

	return nil
}
