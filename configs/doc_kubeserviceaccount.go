package configs

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/url"
)

// KubeServiceAccountConfig is Talos's KubeServiceAccountConfig: the key
// and issuer service account tokens are signed with, and what else the
// API server accepts. The private key is cluster.serviceAccount.key; the
// issuer URL, the accepted issuers, keys and audiences have no v1alpha1
// field (there the issuer and audience are the cluster endpoint), and
// the node reads them from the document: the API server's
// --service-account-issuer (the issuer first, then the accepted ones),
// --api-audiences (the audiences, the issuer URL when none) and
// service-account.pub (the issuing key's public key, then the accepted
// keys).
type KubeServiceAccountConfig struct {
	Issuer   KubeServiceAccountIssuer   `yaml:"issuer"`
	Accepted KubeServiceAccountAccepted `yaml:"accepted,omitempty"`
}

// KubeServiceAccountIssuer is the issuing key (PEM) and issuer URL.
type KubeServiceAccountIssuer struct {
	PrivateKey string `yaml:"privateKey" secret:"true"`
	IssuerURL  string `yaml:"issuerURL"`
}

// KubeServiceAccountAccepted is what the API server accepts besides the
// issuer: public keys (PEM), issuer URLs and audiences.
type KubeServiceAccountAccepted struct {
	PublicKeys []string `yaml:"publicKeys,omitempty"`
	Issuers    []string `yaml:"issuers,omitempty"`
	Audiences  []string `yaml:"audiences,omitempty"`
}

// Kind implements Document.
func (*KubeServiceAccountConfig) Kind() string { return "KubeServiceAccountConfig" }

// check: the key itself is checked where it is folded
// (cluster.serviceAccount.key: RSA or ECDSA, strong enough).
func (k *KubeServiceAccountConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if k.Issuer.PrivateKey == "" {
		v.errorf(path+".issuer.privateKey", "service issuer private key is required (PEM)")
	} else {
		v.check(path+".issuer.privateKey", pemErr("service issuer private key is invalid", pemBlocks(k.Issuer.PrivateKey, "")))
	}

	if k.Issuer.IssuerURL == "" {
		v.errorf(path+".issuer.issuerURL", "service issuer URL is required (the cluster endpoint, e.g. https://HOST:6443)")
	} else {
		v.check(path+".issuer.issuerURL", checkIssuerURL(k.Issuer.IssuerURL))
	}

	for i, u := range k.Accepted.Issuers {
		v.check(indexPath(path+".accepted.issuers", i), checkIssuerURL(u))
	}

	for i, key := range k.Accepted.PublicKeys {
		v.check(indexPath(path+".accepted.publicKeys", i), checkPublicKeyPEM(key))
	}

	for i, a := range k.Accepted.Audiences {
		if a == "" {
			v.errorf(indexPath(path+".accepted.audiences", i), "an audience cannot be empty")
		}
	}
}

// checkIssuerURL: kube-apiserver takes an issuer as a URL (https) or a
// plain string without a colon; Talos writes URLs.
func checkIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("invalid issuer URL " + s + ": " + unwrapURLError(err).Error())
	}

	if u.Scheme != "https" || u.Host == "" {
		return errors.New("invalid issuer URL " + s + ": want https://HOST[:PORT][/PATH]")
	}

	return nil
}

// checkPublicKeyPEM requires a PEM public key kube-apiserver can verify
// tokens with.
func checkPublicKeyPEM(s string) error {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return errors.New("accepted public key: no PEM block found: write the PEM text (-----BEGIN PUBLIC KEY-----)")
	}

	if _, err := x509.ParsePKIXPublicKey(b.Bytes); err != nil {
		return errors.New("accepted public key: invalid public key: " + err.Error())
	}

	return nil
}

func (k *KubeServiceAccountConfig) fold(f *folding) {
	if f.writtenCluster().ServiceAccount != nil {
		f.conflict("", "cluster.serviceAccount", "the service account key")
	}

	f.cluster().ServiceAccount = &PEMKey{Key: Base64(k.Issuer.PrivateKey)}
	f.alias("cluster.serviceAccount", "issuer")
	f.alias("cluster.serviceAccount.key", "issuer.privateKey")
}
