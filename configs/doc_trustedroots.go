package configs

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
)

// TrustedRootsConfig is Talos's TrustedRootsConfig: CA certificates the
// node trusts besides its own bundle, for image pulls and every other
// TLS connection it makes (a registry or proxy behind an enterprise CA).
// The node writes them into its bundle, /etc/ssl/certs/ca-certificates
// as on Talos (TrustedRootsBundle, internal/cri).
type TrustedRootsConfig struct {
	Name         string `yaml:"name"`
	Certificates string `yaml:"certificates"`
}

// Kind implements Document.
func (*TrustedRootsConfig) Kind() string { return "TrustedRootsConfig" }

// DocumentName implements NamedDocument.
func (t *TrustedRootsConfig) DocumentName() string { return t.Name }

// Talos takes the certificates as they are; a bundle that holds none
// would silently trust nothing, so talosbox checks them.
func (t *TrustedRootsConfig) check(v *validator, path string) {
	if t.Name == "" {
		v.errorf(path+".name", "name is required: a name for the certificates, such as my-enterprise-ca")
	}

	p := path + ".certificates"

	if strings.TrimSpace(t.Certificates) == "" {
		v.errorf(p, "certificates are required: PEM-encoded CA certificates (-----BEGIN CERTIFICATE-----)")

		return
	}

	rest := []byte(t.Certificates)

	for n := 1; ; n++ {
		var block *pem.Block

		block, rest = pem.Decode(rest)

		switch {
		case block == nil && n == 1:
			v.errorf(p, "certificates hold no PEM block: want PEM-encoded CA certificates (-----BEGIN CERTIFICATE-----)")

			return
		case block == nil:
			return
		case block.Type != "CERTIFICATE":
			v.errorf(p, "certificates: PEM block %d is a %s, not a CERTIFICATE", n, block.Type)
		default:
			if _, err := x509.ParseCertificate(block.Bytes); err != nil {
				v.errorf(p, "certificates: certificate %d does not parse: %v", n, err)
			}
		}
	}
}

func (*TrustedRootsConfig) fold(*folding) {}

// TrustedRootsBundle is what the config's TrustedRootsConfigs add to the
// node's CA bundle, each under a heading with its name, as Talos writes
// them; nil when it has none.
func TrustedRootsBundle(c *Config) []byte {
	var b strings.Builder

	for _, t := range DocumentsOf[*TrustedRootsConfig](c) {
		b.WriteString("\n" + t.Name + ":\n" + strings.Repeat("=", len(t.Name)+1) + "\n")
		b.WriteString(strings.TrimSpace(t.Certificates) + "\n")
	}

	if b.Len() == 0 {
		return nil
	}

	return []byte(b.String())
}
