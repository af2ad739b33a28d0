// Package pki generates and checks the key material of a talosbox cluster:
// the secrets bundle (secrets.yaml), certificate authorities, client and
// server certificates, and the file helpers behind `talosctl gen`.
package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Validity periods, matching the Talos defaults.
const (
	CAValidity              = 87600 * time.Hour // 10 years
	ClientCertValidity      = 8760 * time.Hour  // 1 year
	ServerCertValidity      = 24 * time.Hour
	clockSkewAllowance      = time.Minute
	serialNumberBits        = 128
	defaultCertificateHours = 24
)

// ErrKeyMismatch reports a private key that does not belong to its certificate.
var ErrKeyMismatch = errors.New("private key does not match certificate")

// CertAndKey is a PEM encoded certificate and its PEM encoded private key.
// Key is nil when only the certificate is known (a worker knows CA certs only).
type CertAndKey struct {
	Crt []byte
	Key []byte
}

// Certificate parses the certificate.
func (c *CertAndKey) Certificate() (*x509.Certificate, error) {
	return ParseCertificatePEM(c.Crt)
}

// Signer parses the private key.
func (c *CertAndKey) Signer() (crypto.Signer, error) {
	if len(c.Key) == 0 {
		return nil, errors.New("private key is missing")
	}

	return ParsePrivateKeyPEM(c.Key)
}

// Validate checks that the certificate and key parse and that the key
// belongs to the certificate. A nil Key is accepted.
func (c *CertAndKey) Validate() error {
	crt, err := c.Certificate()
	if err != nil {
		return err
	}

	if len(c.Key) == 0 {
		return nil
	}

	key, err := c.Signer()
	if err != nil {
		return err
	}

	if !publicKeysEqual(key.Public(), crt.PublicKey) {
		return ErrKeyMismatch
	}

	return nil
}

// TLSCertificate returns the pair in the form crypto/tls wants.
func (c *CertAndKey) TLSCertificate() (tls.Certificate, error) {
	crt, err := c.Certificate()
	if err != nil {
		return tls.Certificate{}, err
	}

	key, err := c.Signer()
	if err != nil {
		return tls.Certificate{}, err
	}

	if !publicKeysEqual(key.Public(), crt.PublicKey) {
		return tls.Certificate{}, ErrKeyMismatch
	}

	return tls.Certificate{Certificate: [][]byte{crt.Raw}, PrivateKey: key, Leaf: crt}, nil
}

// ParseCertificatePEM decodes the first CERTIFICATE block of data.
func ParseCertificatePEM(data []byte) (*x509.Certificate, error) {
	if len(data) == 0 {
		return nil, errors.New("certificate is missing")
	}

	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("parse certificate: no PEM block found")
	}

	if block.Type != pemTypeCertificate {
		return nil, fmt.Errorf("parse certificate: unexpected PEM block %q", block.Type)
	}

	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}

	return crt, nil
}

// CertPool returns a pool holding the given PEM certificates; each argument
// may hold several blocks (accepted CAs during rotation).
func CertPool(pemCerts ...[]byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()

	for i, p := range pemCerts {
		if !pool.AppendCertsFromPEM(p) {
			return nil, fmt.Errorf("cert pool: argument %d holds no certificate", i)
		}
	}

	return pool, nil
}

// SPKIHash is the Talos "sha256:<hex>" pin of a certificate's public key,
// as written to NAME.sha256 by `talosctl gen ca`.
func SPKIHash(crt *x509.Certificate) string {
	sum := sha256.Sum256(crt.RawSubjectPublicKeyInfo)

	return "sha256:" + hex.EncodeToString(sum[:])
}

// CAOptions describe a self-signed certificate authority.
type CAOptions struct {
	Organization string
	CommonName   string
	KeyType      KeyType
	Validity     time.Duration // CAValidity when zero
	IPs          []net.IP
	Now          func() time.Time
}

// NewCA creates a self-signed certificate authority.
func NewCA(opts CAOptions) (*CertAndKey, error) {
	key, err := GenerateKey(opts.KeyType)
	if err != nil {
		return nil, fmt.Errorf("new CA: %w", err)
	}

	validity := opts.Validity
	if validity == 0 {
		validity = CAValidity
	}

	usage := x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	if opts.KeyType == RSA4096 {
		// Only RSA keys can encipher; setting it on EC keys is meaningless.
		usage |= x509.KeyUsageKeyEncipherment
	}

	tmpl := &x509.Certificate{
		Subject:               subject(opts.CommonName, organizations(opts.Organization)),
		IPAddresses:           opts.IPs,
		KeyUsage:              usage,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}

	if err := setValidity(tmpl, opts.Now, validity); err != nil {
		return nil, fmt.Errorf("new CA: %w", err)
	}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("new CA: sign: %w", err)
	}

	keyPEM, err := EncodePrivateKeyPEM(key)
	if err != nil {
		return nil, fmt.Errorf("new CA: %w", err)
	}

	return &CertAndKey{Crt: encodeCertificatePEM(der), Key: keyPEM}, nil
}

// caSigner parses a CA pair for issuing and refuses a certificate that is
// not a CA, so a leaf cannot be used to mint certificates by mistake.
func caSigner(ca *CertAndKey) (*x509.Certificate, crypto.Signer, error) {
	if ca == nil {
		return nil, nil, errors.New("CA is missing")
	}

	if len(ca.Key) == 0 {
		return nil, nil, errors.New("CA: private key is missing")
	}

	if err := CheckCA(ca); err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}

	crt, err := ca.Certificate()
	if err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}

	key, err := ca.Signer()
	if err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}

	return crt, key, nil
}

// CheckCA is the rule for a certificate authority a node signs with or
// trusts: the certificate parses and is a CA, and the key, when there is
// one, parses and belongs to it. Config validation applies it to every CA
// of the machine config, so a config it accepts never fails here later.
func CheckCA(ca *CertAndKey) error {
	crt, err := ca.Certificate()
	if err != nil {
		return err
	}

	if !crt.IsCA {
		return errors.New("certificate is not a certificate authority (its basic constraints say CA:FALSE)")
	}

	if len(ca.Key) == 0 {
		return nil
	}

	key, err := ca.Signer()
	if err != nil {
		return err
	}

	if !publicKeysEqual(key.Public(), crt.PublicKey) {
		return ErrKeyMismatch
	}

	return nil
}

// leafTemplate describes a leaf certificate to sign.
type leafTemplate struct {
	Subject     pkix.Name
	IPs         []net.IP
	DNSNames    []string
	ExtKeyUsage []x509.ExtKeyUsage
	TTL         time.Duration
	Now         func() time.Time
}

// signLeaf signs pub with the CA and returns the PEM certificate.
func signLeaf(ca *CertAndKey, pub crypto.PublicKey, lt leafTemplate) ([]byte, error) {
	caCrt, caKey, err := caSigner(ca)
	if err != nil {
		return nil, err
	}

	usage := x509.KeyUsageDigitalSignature
	if _, isRSA := pub.(*rsa.PublicKey); isRSA {
		usage |= x509.KeyUsageKeyEncipherment
	}

	tmpl := &x509.Certificate{
		Subject:               lt.Subject,
		IPAddresses:           lt.IPs,
		DNSNames:              lt.DNSNames,
		KeyUsage:              usage,
		ExtKeyUsage:           lt.ExtKeyUsage,
		BasicConstraintsValid: true,
	}

	if err := setValidity(tmpl, lt.Now, lt.TTL); err != nil {
		return nil, err
	}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCrt, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}

	return encodeCertificatePEM(der), nil
}

// setValidity fills the serial number and validity window. NotBefore is
// backdated a little so a node whose clock lags the issuer's still accepts
// a fresh certificate.
func setValidity(tmpl *x509.Certificate, now func() time.Time, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("invalid certificate lifetime %v", ttl)
	}

	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), serialNumberBits))
	if err != nil {
		return fmt.Errorf("serial number: %w", err)
	}

	t := time.Now()
	if now != nil {
		t = now()
	}

	tmpl.SerialNumber = serial
	tmpl.NotBefore = t.Add(-clockSkewAllowance).UTC()
	tmpl.NotAfter = t.Add(ttl).UTC()

	return nil
}

func subject(cn string, orgs []string) pkix.Name {
	return pkix.Name{CommonName: cn, Organization: orgs}
}

func organizations(org string) []string {
	if org == "" {
		return nil
	}

	return []string{org}
}

func encodeCertificatePEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemTypeCertificate, Bytes: der})
}
