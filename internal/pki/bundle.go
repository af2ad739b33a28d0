package pki

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"time"
)

// Bundle is the cluster-wide secret material Talos calls the secrets bundle
// (`talosctl gen secrets` writes it as secrets.yaml). Machine configs for
// every node of a cluster are generated from one bundle.
type Bundle struct {
	Cluster struct{ ID, Secret string }
	Secrets struct {
		BootstrapToken            string
		SecretboxEncryptionSecret string
		// AESCBCEncryptionSecret is only present in bundles made by old
		// Talos versions; it is kept so those bundles round-trip.
		AESCBCEncryptionSecret string
	}
	TrustdInfo struct{ Token string }
	Certs      struct {
		Etcd, K8s, K8sAggregator, OS CertAndKey
		K8sServiceAccount            struct{ Key []byte }
	}
}

// BundleOptions tune NewBundle; the zero value is ready to use.
type BundleOptions struct {
	Now func() time.Time
}

// tokenPattern is the kubeadm bootstrap token format, also used for the
// trustd token.
var tokenPattern = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// ValidToken reports whether s has the bootstrap/trustd token format.
func ValidToken(s string) bool {
	return tokenPattern.MatchString(s)
}

// NewBundle generates a fresh secrets bundle.
func NewBundle(opts BundleOptions) (*Bundle, error) {
	var (
		b   Bundle
		err error
	)

	for _, s := range []*string{&b.Cluster.ID, &b.Cluster.Secret, &b.Secrets.SecretboxEncryptionSecret} {
		if *s, err = randomBase64(32); err != nil {
			return nil, fmt.Errorf("new bundle: %w", err)
		}
	}

	for _, s := range []*string{&b.Secrets.BootstrapToken, &b.TrustdInfo.Token} {
		if *s, err = NewToken(); err != nil {
			return nil, fmt.Errorf("new bundle: %w", err)
		}
	}

	cas := []struct {
		dst  *CertAndKey
		opts CAOptions
	}{
		{&b.Certs.OS, CAOptions{Organization: "talos", KeyType: Ed25519}},
		{&b.Certs.K8s, CAOptions{Organization: "kubernetes", KeyType: ECDSAP256}},
		{&b.Certs.K8sAggregator, CAOptions{CommonName: "front-proxy", KeyType: ECDSAP256}},
		{&b.Certs.Etcd, CAOptions{Organization: "etcd", KeyType: ECDSAP256}},
	}

	for _, ca := range cas {
		ca.opts.Now = opts.Now

		pair, err := NewCA(ca.opts)
		if err != nil {
			return nil, fmt.Errorf("new bundle: %w", err)
		}

		*ca.dst = *pair
	}

	if b.Certs.K8sServiceAccount.Key, err = GenerateKeyPEM(ECDSAP256); err != nil {
		return nil, fmt.Errorf("new bundle: service account key: %w", err)
	}

	return &b, nil
}

// AdminCertificate issues a talosctl client certificate with the given roles
// (os:admin when empty) signed by the OS CA; ttl zero means one year.
func (b *Bundle) AdminCertificate(roles []string, ttl time.Duration) (*CertAndKey, error) {
	return NewClientCertificate(&b.Certs.OS, ClientOptions{Roles: roles, TTL: ttl})
}

// NewToken returns a random token in the "[a-z0-9]{6}.[a-z0-9]{16}" format.
func NewToken() (string, error) {
	head, err := randomString(6)
	if err != nil {
		return "", err
	}

	tail, err := randomString(16)
	if err != nil {
		return "", err
	}

	return head + "." + tail, nil
}

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// randomString draws n characters uniformly from tokenAlphabet, rejecting
// bytes past the largest multiple of the alphabet size to avoid modulo bias.
func randomString(n int) (string, error) {
	const limit = 256 - 256%len(tokenAlphabet)

	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)

	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("random token: %w", err)
		}

		for _, c := range buf {
			if int(c) < limit && len(out) < n {
				out = append(out, tokenAlphabet[int(c)%len(tokenAlphabet)])
			}
		}
	}

	return string(out), nil
}

func randomBase64(n int) (string, error) {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("random secret: %w", err)
	}

	return base64.StdEncoding.EncodeToString(buf), nil
}
