package pki

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// The wire types mirror Talos's secrets.yaml field names and order, so a
// bundle from real `talosctl gen secrets` loads here and vice versa.
type wireBundle struct {
	Cluster    wireCluster `yaml:"cluster"`
	Secrets    wireSecrets `yaml:"secrets"`
	TrustdInfo wireTrustd  `yaml:"trustdinfo"`
	Certs      wireCerts   `yaml:"certs"`
}

type wireCluster struct {
	ID     string `yaml:"id"`
	Secret string `yaml:"secret"`
}

type wireSecrets struct {
	BootstrapToken            string `yaml:"bootstraptoken"`
	AESCBCEncryptionSecret    string `yaml:"aescbcencryptionsecret,omitempty"`
	SecretboxEncryptionSecret string `yaml:"secretboxencryptionsecret"`
}

type wireTrustd struct {
	Token string `yaml:"token"`
}

type wireCerts struct {
	Etcd              wirePair `yaml:"etcd"`
	K8s               wirePair `yaml:"k8s"`
	K8sAggregator     wirePair `yaml:"k8saggregator"`
	K8sServiceAccount wireKey  `yaml:"k8sserviceaccount"`
	OS                wirePair `yaml:"os"`
}

type wirePair struct {
	Crt pemField `yaml:"crt"`
	Key pemField `yaml:"key,omitempty"`
}

type wireKey struct {
	Key pemField `yaml:"key"`
}

// pemField is PEM bytes carried as a plain base64 string, the way Talos
// writes them (not as a YAML !!binary node).
type pemField []byte

func (p pemField) MarshalYAML() (any, error) {
	return base64.StdEncoding.EncodeToString(p), nil
}

func (p *pemField) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: expected a base64 string", node.Line)
	}

	// Wrapped base64 (for example pasted from `base64` output) is accepted.
	clean := strings.Join(strings.Fields(node.Value), "")

	data, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		return fmt.Errorf("line %d: invalid base64: %w", node.Line, err)
	}

	*p = data

	return nil
}

// Marshal encodes the bundle as secrets.yaml.
func (b *Bundle) Marshal() ([]byte, error) {
	w := wireBundle{
		Cluster: wireCluster{ID: b.Cluster.ID, Secret: b.Cluster.Secret},
		Secrets: wireSecrets{
			BootstrapToken:            b.Secrets.BootstrapToken,
			AESCBCEncryptionSecret:    b.Secrets.AESCBCEncryptionSecret,
			SecretboxEncryptionSecret: b.Secrets.SecretboxEncryptionSecret,
		},
		TrustdInfo: wireTrustd{Token: b.TrustdInfo.Token},
		Certs: wireCerts{
			Etcd:              toWire(b.Certs.Etcd),
			K8s:               toWire(b.Certs.K8s),
			K8sAggregator:     toWire(b.Certs.K8sAggregator),
			K8sServiceAccount: wireKey{Key: b.Certs.K8sServiceAccount.Key},
			OS:                toWire(b.Certs.OS),
		},
	}

	var buf bytes.Buffer

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)

	if err := enc.Encode(&w); err != nil {
		return nil, fmt.Errorf("marshal secrets bundle: %w", err)
	}

	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("marshal secrets bundle: %w", err)
	}

	return buf.Bytes(), nil
}

// ParseBundle decodes and validates secrets.yaml. Unknown fields are errors
// (with their line), as are missing CAs and keys that do not match.
func ParseBundle(data []byte) (*Bundle, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)

	var w wireBundle
	if err := dec.Decode(&w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("secrets bundle: document is empty")
		}

		return nil, fmt.Errorf("secrets bundle: %w", err)
	}

	var b Bundle

	b.Cluster.ID, b.Cluster.Secret = w.Cluster.ID, w.Cluster.Secret
	b.Secrets.BootstrapToken = w.Secrets.BootstrapToken
	b.Secrets.AESCBCEncryptionSecret = w.Secrets.AESCBCEncryptionSecret
	b.Secrets.SecretboxEncryptionSecret = w.Secrets.SecretboxEncryptionSecret
	b.TrustdInfo.Token = w.TrustdInfo.Token
	b.Certs.Etcd = fromWire(w.Certs.Etcd)
	b.Certs.K8s = fromWire(w.Certs.K8s)
	b.Certs.K8sAggregator = fromWire(w.Certs.K8sAggregator)
	b.Certs.OS = fromWire(w.Certs.OS)
	b.Certs.K8sServiceAccount.Key = w.Certs.K8sServiceAccount.Key

	if err := b.Validate(); err != nil {
		return nil, err
	}

	return &b, nil
}

// Validate checks that every secret is present and well formed and that
// each CA is a CA whose key matches its certificate. All problems are
// reported together.
func (b *Bundle) Validate() error {
	var errs []error

	problem := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}

	if b.Cluster.ID == "" {
		problem("cluster.id", "is missing")
	}

	if b.Cluster.Secret == "" {
		problem("cluster.secret", "is missing")
	}

	if !ValidToken(b.Secrets.BootstrapToken) {
		problem("secrets.bootstraptoken", "invalid token %q, want [a-z0-9]{6}.[a-z0-9]{16}", b.Secrets.BootstrapToken)
	}

	if !ValidToken(b.TrustdInfo.Token) {
		problem("trustdinfo.token", "invalid token %q, want [a-z0-9]{6}.[a-z0-9]{16}", b.TrustdInfo.Token)
	}

	if raw, err := base64.StdEncoding.DecodeString(b.Secrets.SecretboxEncryptionSecret); err != nil || len(raw) != 32 {
		problem("secrets.secretboxencryptionsecret", "want base64 of 32 bytes")
	}

	for _, ca := range []struct {
		field string
		pair  *CertAndKey
	}{
		{"certs.etcd", &b.Certs.Etcd},
		{"certs.k8s", &b.Certs.K8s},
		{"certs.k8saggregator", &b.Certs.K8sAggregator},
		{"certs.os", &b.Certs.OS},
	} {
		if err := validateCA(ca.pair); err != nil {
			problem(ca.field, "%v", err)
		}
	}

	if len(b.Certs.K8sServiceAccount.Key) == 0 {
		problem("certs.k8sserviceaccount.key", "is missing")
	} else if _, err := ParsePrivateKeyPEM(b.Certs.K8sServiceAccount.Key); err != nil {
		problem("certs.k8sserviceaccount.key", "%v", err)
	}

	if len(errs) == 0 {
		return nil
	}

	return fmt.Errorf("secrets bundle: %w", errors.Join(errs...))
}

func validateCA(pair *CertAndKey) error {
	switch {
	case len(pair.Crt) == 0:
		return errors.New("CA certificate is missing")
	case len(pair.Key) == 0:
		return errors.New("CA key is missing")
	}

	crt, err := pair.Certificate()
	if err != nil {
		return err
	}

	if !crt.IsCA {
		return errors.New("certificate is not a CA")
	}

	return pair.Validate()
}

func toWire(p CertAndKey) wirePair { return wirePair{Crt: p.Crt, Key: p.Key} }

func fromWire(p wirePair) CertAndKey { return CertAndKey{Crt: p.Crt, Key: p.Key} }
