package pki

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The Gen* functions implement the file conventions of `talosctl gen
// ca|key|csr|crt|keypair`: NAME.crt, NAME.key, NAME.csr and NAME.sha256 in
// Dir (the working directory when empty). Every file is written 0600 and an
// existing file is never replaced.

// GenCAOptions are the flags of `talosctl gen ca`.
type GenCAOptions struct {
	Dir          string
	Organization string // also the file base name
	Hours        int    // 87600 when zero
	RSA          bool
	Now          func() time.Time
}

// GenCA writes ORG.crt, ORG.key and ORG.sha256 (the SPKI pin) and returns
// the paths written.
func GenCA(opts GenCAOptions) ([]string, error) {
	if opts.Organization == "" {
		return nil, errors.New("gen ca: organization is required")
	}

	kt := Ed25519
	if opts.RSA {
		kt = RSA4096
	}

	ca, err := NewCA(CAOptions{
		Organization: opts.Organization,
		KeyType:      kt,
		Validity:     hours(opts.Hours, CAValidity),
		Now:          opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("gen ca: %w", err)
	}

	crt, err := ca.Certificate()
	if err != nil {
		return nil, fmt.Errorf("gen ca: %w", err)
	}

	base := filepath.Join(opts.Dir, opts.Organization)

	return writeNewFiles("gen ca", []namedData{
		{base + ".crt", ca.Crt},
		{base + ".sha256", []byte(SPKIHash(crt))},
		{base + ".key", ca.Key},
	})
}

// GenKey writes a new Ed25519 private key to NAME.key (`talosctl gen key`).
func GenKey(dir, name string) (string, error) {
	if name == "" {
		return "", errors.New("gen key: name is required")
	}

	key, err := GenerateKeyPEM(Ed25519)
	if err != nil {
		return "", fmt.Errorf("gen key: %w", err)
	}

	path := filepath.Join(dir, name+".key")
	if err := writeNewFile(path, key); err != nil {
		return "", fmt.Errorf("gen key: %w", err)
	}

	return path, nil
}

// GenCSROptions are the flags of `talosctl gen csr`.
type GenCSROptions struct {
	Key   string   // path of the private key; the CSR goes next to it
	IPs   []string // at least one
	Roles []string // subject organizations; os:admin when empty
}

// GenCSR writes KEY-without-extension.csr and returns its path.
func GenCSR(opts GenCSROptions) (string, error) {
	if opts.Key == "" {
		return "", errors.New("gen csr: key path is required")
	}

	if len(opts.IPs) == 0 {
		return "", errors.New("gen csr: at least one IP is required")
	}

	ips, err := parseIPs(opts.IPs)
	if err != nil {
		return "", fmt.Errorf("gen csr: %w", err)
	}

	roles := opts.Roles
	if len(roles) == 0 {
		roles = []string{RoleAdmin}
	}

	keyPEM, err := os.ReadFile(opts.Key)
	if err != nil {
		return "", fmt.Errorf("gen csr: read key: %w", err)
	}

	csr, err := NewCSR(keyPEM, CSROptions{Organizations: roles, IPs: ips})
	if err != nil {
		return "", fmt.Errorf("gen csr: %w", err)
	}

	path := strings.TrimSuffix(opts.Key, filepath.Ext(opts.Key)) + ".csr"
	if err := writeNewFile(path, csr); err != nil {
		return "", fmt.Errorf("gen csr: %w", err)
	}

	return path, nil
}

// GenCrtOptions are the flags of `talosctl gen crt`.
type GenCrtOptions struct {
	Dir   string
	CA    string // base path of the CA: CA.crt and CA.key are read
	CSR   string // path of the CSR
	Name  string // output base name: NAME.crt
	Hours int    // 24 when zero
	Now   func() time.Time
}

// GenCrt signs the CSR with the CA into NAME.crt (client authentication,
// the use the Talos docs give for it: a talosconfig admin certificate).
func GenCrt(opts GenCrtOptions) (string, error) {
	if opts.CA == "" || opts.CSR == "" || opts.Name == "" {
		return "", errors.New("gen crt: --ca, --csr and --name are required")
	}

	ca, err := ReadCertAndKey(opts.CA)
	if err != nil {
		return "", fmt.Errorf("gen crt: %w", err)
	}

	csr, err := os.ReadFile(opts.CSR)
	if err != nil {
		return "", fmt.Errorf("gen crt: read CSR: %w", err)
	}

	crt, err := SignCSR(ca, csr, SignOptions{TTL: hours(opts.Hours, defaultCertificateHours*time.Hour), Now: opts.Now})
	if err != nil {
		return "", fmt.Errorf("gen crt: %w", err)
	}

	path := filepath.Join(opts.Dir, opts.Name+".crt")
	if err := writeNewFile(path, crt); err != nil {
		return "", fmt.Errorf("gen crt: %w", err)
	}

	return path, nil
}

// GenKeypairOptions are the flags of `talosctl gen keypair`.
type GenKeypairOptions struct {
	Dir          string
	Organization string // also the file base name
	IP           string // optional IP SAN
	Now          func() time.Time
}

// GenKeypair writes a self-signed Ed25519 certificate and key as ORG.crt and
// ORG.key. Like Talos it is a CA-capable pair, valid for 24 hours.
func GenKeypair(opts GenKeypairOptions) ([]string, error) {
	if opts.Organization == "" {
		return nil, errors.New("gen keypair: organization is required")
	}

	var ips []net.IP

	if opts.IP != "" {
		parsed, err := parseIPs([]string{opts.IP})
		if err != nil {
			return nil, fmt.Errorf("gen keypair: %w", err)
		}

		ips = parsed
	}

	pair, err := NewCA(CAOptions{
		Organization: opts.Organization,
		IPs:          ips,
		Validity:     defaultCertificateHours * time.Hour,
		Now:          opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("gen keypair: %w", err)
	}

	base := filepath.Join(opts.Dir, opts.Organization)

	return writeNewFiles("gen keypair", []namedData{
		{base + ".crt", pair.Crt},
		{base + ".key", pair.Key},
	})
}

// ReadCertAndKey reads BASE.crt and BASE.key and checks that they match.
func ReadCertAndKey(base string) (*CertAndKey, error) {
	crt, err := os.ReadFile(base + ".crt")
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}

	key, err := os.ReadFile(base + ".key")
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}

	pair := &CertAndKey{Crt: crt, Key: key}
	if err := pair.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", base, err)
	}

	return pair, nil
}

// ReadCA reads a certificate authority from a certificate file and a key
// file (the --ca-cert and --ca-key of an applet run alone). It checks that
// the key belongs to the certificate and that the certificate is a CA, so
// a wrong file is reported when the applet starts, not when it first
// issues a certificate.
func ReadCA(crtPath, keyPath string) (*CertAndKey, error) {
	crt, err := os.ReadFile(crtPath)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}

	key, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}

	if len(key) == 0 {
		return nil, fmt.Errorf("CA key %s is empty", keyPath)
	}

	ca := &CertAndKey{Crt: crt, Key: key}
	if err := ca.Validate(); err != nil {
		return nil, fmt.Errorf("CA %s with key %s: %w", crtPath, keyPath, err)
	}

	c, err := ca.Certificate()
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", crtPath, err)
	}

	if !c.IsCA {
		return nil, fmt.Errorf("%s is not a certificate authority (%q)", crtPath, c.Subject.String())
	}

	return ca, nil
}

type namedData struct {
	path string
	data []byte
}

// writeNewFiles checks all targets before writing any, so a clash does not
// leave a half-written set behind.
func writeNewFiles(op string, files []namedData) ([]string, error) {
	paths := make([]string, 0, len(files))

	for _, f := range files {
		if _, err := os.Lstat(f.path); err == nil {
			return nil, fmt.Errorf("%s: file %q already exists", op, f.path)
		}
	}

	for _, f := range files {
		if err := writeNewFile(f.path, f.data); err != nil {
			return paths, fmt.Errorf("%s: %w", op, err)
		}

		paths = append(paths, f.path)
	}

	return paths, nil
}

func parseIPs(in []string) ([]net.IP, error) {
	out := make([]net.IP, 0, len(in))

	for _, s := range in {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return nil, fmt.Errorf("invalid IP address %q", s)
		}

		out = append(out, ip)
	}

	return out, nil
}

func hours(h int, def time.Duration) time.Duration {
	if h == 0 {
		return def
	}

	return time.Duration(h) * time.Hour
}
