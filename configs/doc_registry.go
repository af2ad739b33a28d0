package configs

import (
	"crypto/x509"
	"net/url"
	"strconv"
)

// RegistryMirrorConfig is Talos's RegistryMirrorConfig: the mirrors of one
// registry (named by its host, or "*" for every registry). It is
// machine.registries.mirrors[name]; as in Talos, a document wins over a
// v1alpha1 entry of the same name.
type RegistryMirrorConfig struct {
	Name         string             `yaml:"name"`
	Endpoints    []RegistryEndpoint `yaml:"endpoints,omitempty"`
	SkipFallback *bool              `yaml:"skipFallback,omitempty"`
}

// RegistryEndpoint is one mirror.
type RegistryEndpoint struct {
	URL          string `yaml:"url"`
	OverridePath *bool  `yaml:"overridePath,omitempty"`
}

// Kind implements Document.
func (*RegistryMirrorConfig) Kind() string { return "RegistryMirrorConfig" }

// DocumentName implements NamedDocument.
func (r *RegistryMirrorConfig) DocumentName() string { return r.Name }

func (r *RegistryMirrorConfig) check(v *validator, path string) {
	if r.Name == "" {
		v.errorf(path+".name", "name must be specified: the registry host (docker.io, ghcr.io, or * for every registry)")
	}

	for i, ep := range r.Endpoints {
		p := path + ".endpoints[" + strconv.Itoa(i) + "].url"

		u, err := url.Parse(ep.URL)

		switch {
		case ep.URL == "":
			v.errorf(p, "url must be specified")
		case err != nil:
			v.errorf(p, "invalid URL %q: %v", ep.URL, err)
		case u.Scheme != "http" && u.Scheme != "https":
			v.errorf(p, "unsupported scheme %q in %q: want http or https", u.Scheme, ep.URL)
		case u.Host == "":
			v.errorf(p, "URL %q has no host", ep.URL)
		}
	}
}

func (r *RegistryMirrorConfig) fold(f *folding) {
	m := RegistryMirror{SkipFallback: r.SkipFallback != nil && *r.SkipFallback}

	for _, ep := range r.Endpoints {
		m.Endpoints = append(m.Endpoints, ep.URL)
		// v1alpha1 has one overridePath for all of a registry's mirrors.
		m.OverridePath = m.OverridePath || (ep.OverridePath != nil && *ep.OverridePath)
	}

	regs := f.registries()
	if regs.Mirrors == nil {
		regs.Mirrors = map[string]RegistryMirror{}
	}

	regs.Mirrors[r.Name] = m
	f.alias(keyPath("machine.registries.mirrors", r.Name), "")
}

// RegistryAuthConfig is Talos's RegistryAuthConfig: credentials for one
// registry host, machine.registries.config[name].auth.
type RegistryAuthConfig struct {
	Name          string `yaml:"name"`
	Username      string `yaml:"username,omitempty"`
	Password      string `yaml:"password,omitempty" secret:"true"`
	Auth          string `yaml:"auth,omitempty" secret:"true"`
	IdentityToken string `yaml:"identityToken,omitempty" secret:"true"`
}

// Kind implements Document.
func (*RegistryAuthConfig) Kind() string { return "RegistryAuthConfig" }

// DocumentName implements NamedDocument.
func (r *RegistryAuthConfig) DocumentName() string { return r.Name }

func (r *RegistryAuthConfig) check(v *validator, path string) {
	if r.Name == "" {
		v.errorf(path+".name", "name must be specified: the registry host the credentials are for")
	}

	user, token, auth := r.Username != "", r.IdentityToken != "", r.Auth != ""

	if user && token {
		v.errorf(path, "only one of username/password or identityToken authentication can be specified")
	}

	if auth && (user || token) {
		v.errorf(path, "only one of auth, username/password or identityToken authentication can be specified")
	}
}

func (r *RegistryAuthConfig) fold(f *folding) {
	c := f.registryConfig(r.Name)
	c.Auth = &RegistryAuth{Username: r.Username, Password: r.Password, Auth: r.Auth, IdentityToken: r.IdentityToken}
	f.set(r.Name, c)
	f.alias(keyPath("machine.registries.config", r.Name)+".auth", "")
}

// RegistryTLSConfig is Talos's RegistryTLSConfig: TLS to one registry
// host, machine.registries.config[name].tls. Unlike v1alpha1 it holds PEM
// text, not base64.
type RegistryTLSConfig struct {
	Name               string             `yaml:"name"`
	ClientIdentity     *CertificateAndKey `yaml:"clientIdentity,omitempty"`
	CA                 string             `yaml:"ca,omitempty"`
	InsecureSkipVerify *bool              `yaml:"insecureSkipVerify,omitempty"`
}

// CertificateAndKey is a PEM certificate and key as typed documents write
// them (plain PEM text, not base64).
type CertificateAndKey struct {
	Cert string `yaml:"cert,omitempty"`
	Key  string `yaml:"key,omitempty" secret:"true"`
}

// Kind implements Document.
func (*RegistryTLSConfig) Kind() string { return "RegistryTLSConfig" }

// DocumentName implements NamedDocument.
func (r *RegistryTLSConfig) DocumentName() string { return r.Name }

func (r *RegistryTLSConfig) check(v *validator, path string) {
	if r.Name == "" {
		v.errorf(path+".name", "name must be specified: the registry host to reach over TLS")
	}

	if r.CA != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(r.CA)) {
		v.errorf(path+".ca", "ca must be a valid PEM-encoded certificate")
	}

	if id := r.ClientIdentity; id != nil {
		switch {
		case id.Cert == "":
			v.errorf(path+".clientIdentity.cert", "client identity: certificate is required")
		case id.Key == "":
			v.errorf(path+".clientIdentity.key", "client identity: key is required")
		default:
			v.leafPair(path+".clientIdentity", &PEMCertificateAndKey{Crt: Base64(id.Cert), Key: Base64(id.Key)})
		}
	}
}

func (r *RegistryTLSConfig) fold(f *folding) {
	c := f.registryConfig(r.Name)
	t := &RegistryTLS{InsecureSkipVerify: r.InsecureSkipVerify != nil && *r.InsecureSkipVerify}

	// A CA that is not PEM is refused by check, in this document's
	// terms; folded, the v1alpha1 rules would refuse it again in theirs.
	if r.CA != "" && x509.NewCertPool().AppendCertsFromPEM([]byte(r.CA)) {
		t.CA = Base64(r.CA)
	}

	if id := r.ClientIdentity; id != nil {
		t.ClientIdentity = &PEMCertificateAndKey{Crt: Base64(id.Cert), Key: Base64(id.Key)}
	}

	c.TLS = t
	f.set(r.Name, c)
	f.alias(keyPath("machine.registries.config", r.Name)+".tls", "")
}

func (f *folding) registries() *RegistriesConfig {
	m := f.machine()
	if m.Registries == nil {
		m.Registries = &RegistriesConfig{}
	}

	return m.Registries
}

// registryConfig is the effective machine.registries.config entry of
// host, a copy to change and set back.
func (f *folding) registryConfig(host string) RegistryConfig {
	return f.registries().Config[host]
}

func (f *folding) set(host string, c RegistryConfig) {
	regs := f.registries()
	if regs.Config == nil {
		regs.Config = map[string]RegistryConfig{}
	}

	regs.Config[host] = c
}
