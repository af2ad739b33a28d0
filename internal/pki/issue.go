package pki

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"time"
)

// RoleAdmin is the role of a full-access talosctl client.
const RoleAdmin = "os:admin"

// ClientOptions describe a client certificate for the Talos API.
type ClientOptions struct {
	Roles   []string      // subject organizations; RoleAdmin when empty
	TTL     time.Duration // ClientCertValidity when zero
	KeyType KeyType
	Now     func() time.Time
}

// NewClientCertificate issues a talosctl client certificate from the OS CA.
// apid derives the caller's roles from the subject organizations, and only
// accepts leaves whose extended key usage is client authentication.
func NewClientCertificate(ca *CertAndKey, opts ClientOptions) (*CertAndKey, error) {
	roles := opts.Roles
	if len(roles) == 0 {
		roles = []string{RoleAdmin}
	}

	ttl := opts.TTL
	if ttl == 0 {
		ttl = ClientCertValidity
	}

	pair, err := newLeaf(ca, opts.KeyType, leafTemplate{
		Subject:     subject("", append([]string(nil), roles...)),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		TTL:         ttl,
		Now:         opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}

	return pair, nil
}

// ServerOptions describe a TLS server certificate (apid, trustd).
type ServerOptions struct {
	CommonName string
	IPs        []net.IP
	DNSNames   []string
	TTL        time.Duration // ServerCertValidity when zero
	KeyType    KeyType
	Now        func() time.Time
}

// NewServerCertificate issues a server certificate from the CA with the
// given SANs and server-authentication usage only.
func NewServerCertificate(ca *CertAndKey, opts ServerOptions) (*CertAndKey, error) {
	if len(opts.IPs) == 0 && len(opts.DNSNames) == 0 {
		return nil, errors.New("server certificate: at least one IP or DNS name is required")
	}

	ttl := opts.TTL
	if ttl == 0 {
		ttl = ServerCertValidity
	}

	pair, err := newLeaf(ca, opts.KeyType, leafTemplate{
		Subject:     subject(opts.CommonName, nil),
		IPs:         opts.IPs,
		DNSNames:    opts.DNSNames,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		TTL:         ttl,
		Now:         opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}

	return pair, nil
}

func newLeaf(ca *CertAndKey, kt KeyType, lt leafTemplate) (*CertAndKey, error) {
	key, err := GenerateKey(kt)
	if err != nil {
		return nil, err
	}

	crt, err := signLeaf(ca, key.Public(), lt)
	if err != nil {
		return nil, err
	}

	keyPEM, err := EncodePrivateKeyPEM(key)
	if err != nil {
		return nil, err
	}

	return &CertAndKey{Crt: crt, Key: keyPEM}, nil
}

// CSROptions describe a certificate signing request.
type CSROptions struct {
	CommonName    string
	Organizations []string // roles for a client certificate
	IPs           []net.IP
	DNSNames      []string
}

// NewCSR creates a PEM encoded certificate signing request for keyPEM.
func NewCSR(keyPEM []byte, opts CSROptions) ([]byte, error) {
	key, err := ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("new CSR: %w", err)
	}

	tmpl := &x509.CertificateRequest{
		Subject:     subject(opts.CommonName, opts.Organizations),
		IPAddresses: opts.IPs,
		DNSNames:    opts.DNSNames,
	}

	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("new CSR: %w", err)
	}

	return pem.EncodeToMemory(&pem.Block{Type: pemTypeCSR, Bytes: der}), nil
}

// ParseCSRPEM decodes a PEM certificate request and checks its signature, so
// a request cannot name a public key its sender does not hold.
func ParseCSRPEM(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("parse CSR: no PEM block found")
	}

	if block.Type != pemTypeCSR && block.Type != "NEW CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("parse CSR: unexpected PEM block %q", block.Type)
	}

	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CSR: %w", err)
	}

	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("parse CSR: bad signature: %w", err)
	}

	return csr, nil
}

// SignOptions control how a CSR becomes a certificate.
type SignOptions struct {
	TTL time.Duration // 24h when zero, like `talosctl gen crt --hours 24`
	// ExtKeyUsage defaults to client authentication, the use of
	// `talosctl gen crt` (an admin certificate for talosconfig).
	ExtKeyUsage []x509.ExtKeyUsage
	// DropOrganizations removes the requested subject organizations. trustd
	// sets it so a joining node cannot obtain a certificate carrying roles.
	DropOrganizations bool
	Now               func() time.Time
}

// SignCSR issues a certificate for a PEM CSR, copying its subject and SANs.
func SignCSR(ca *CertAndKey, csrPEM []byte, opts SignOptions) ([]byte, error) {
	csr, err := ParseCSRPEM(csrPEM)
	if err != nil {
		return nil, err
	}

	ttl := opts.TTL
	if ttl == 0 {
		ttl = defaultCertificateHours * time.Hour
	}

	eku := opts.ExtKeyUsage
	if len(eku) == 0 {
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}

	subj := subject(csr.Subject.CommonName, csr.Subject.Organization)
	if opts.DropOrganizations {
		subj.Organization = nil
	}

	crt, err := signLeaf(ca, csr.PublicKey, leafTemplate{
		Subject:     subj,
		IPs:         csr.IPAddresses,
		DNSNames:    csr.DNSNames,
		ExtKeyUsage: eku,
		TTL:         ttl,
		Now:         opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("sign CSR: %w", err)
	}

	return crt, nil
}
