// Package secrets builds the Kubernetes PKI of one node the way Talos does:
// the control-plane certificates and kubeconfigs, the admin and kubelet
// bootstrap kubeconfigs, the apiserver encryption configuration, and the
// /system/secrets/kubernetes tree the static pods mount.
package secrets

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/pki"
)

// Defaults applied by FromConfig, as in Talos.
const (
	DefaultLocalAPIServerPort = configs.DefaultLocalAPIServerPort
	DefaultDNSDomain          = "cluster.local"
	DefaultServiceSubnet      = "10.96.0.0/12"
	// DefaultValidity is Talos' KubernetesDefaultCertificateValidityDuration.
	DefaultValidity = 365 * 24 * time.Hour
)

// Inputs are what the Kubernetes PKI of one node is made from.
type Inputs struct {
	ClusterName        string
	Endpoint           *url.URL // cluster.controlPlane.endpoint
	LocalAPIServerPort int
	// KubePrismPort, when not 0, is where the node's KubePrism listens
	// (machine.features.kubePrism): the controller-manager's and the
	// scheduler's way to the cluster.
	KubePrismPort  int
	CertSANs       []string // cluster.apiServer.certSANs: IPs or DNS names
	DNSDomain      string
	ServiceSubnets []string
	Hostname, FQDN string
	NodeAddresses  []netip.Addr

	// CA is the issuing CA; its key is only present on control planes.
	CA, AggregatorCA, EtcdCA *pki.CertAndKey
	// AcceptedCAs are trusted besides CA so the CA can be rotated.
	AcceptedCAs       [][]byte
	ServiceAccountKey []byte // PEM private key, RSA or ECDSA
	Token             string // bootstrap token "id.secret"

	SecretboxEncryptionSecret, AESCBCEncryptionSecret string
	// EncryptionConfig, when not nil, is the API server's
	// EncryptionConfiguration as a KubeEtcdEncryptionConfig says it,
	// written instead of the one made from the two secrets.
	EncryptionConfig []byte
	// AggregatorAcceptedCAs are accepted for aggregated API clients
	// besides AggregatorCA, and ServiceAccountAcceptedKeys verify
	// service account tokens besides the issuing key (PEM public keys):
	// the KubeAggregatorCAConfig's and KubeServiceAccountConfig's.
	AggregatorAcceptedCAs      [][]byte
	ServiceAccountAcceptedKeys [][]byte

	Validity time.Duration
	// AdminKubeconfigLifetime is cluster.adminKubeconfig.certLifetime, the
	// lifetime for AdminKubeconfig.
	AdminKubeconfigLifetime time.Duration
	Now                     func() time.Time
}

// FromConfig gathers the inputs of this node from its machine config. A
// control-plane config must carry every CA key and the service-account key;
// a worker only needs the CA certificate, the endpoint and the token.
func FromConfig(cfg *configs.Config, hostname, fqdn string, addrs []netip.Addr) (Inputs, error) {
	if cfg == nil || cfg.Cluster == nil {
		return Inputs{}, errors.New("kubernetes secrets: cluster: section is missing")
	}

	c := cfg.Cluster
	cp := cfg.IsControlPlane()
	in := Inputs{
		ClusterName:               c.ClusterName,
		LocalAPIServerPort:        DefaultLocalAPIServerPort,
		DNSDomain:                 DefaultDNSDomain,
		ServiceSubnets:            []string{DefaultServiceSubnet},
		Hostname:                  hostname,
		FQDN:                      fqdn,
		NodeAddresses:             append([]netip.Addr(nil), addrs...),
		Token:                     c.Token,
		SecretboxEncryptionSecret: c.SecretboxEncryptionSecret,
		AESCBCEncryptionSecret:    c.AESCBCEncryptionSecret,
		Validity:                  DefaultValidity,
		AdminKubeconfigLifetime:   DefaultValidity,
		Now:                       time.Now,
	}

	var errs []error

	fail := func(path string, err error) { errs = append(errs, fmt.Errorf("%s: %w", path, err)) }

	if c.ClusterName == "" {
		fail("cluster.clusterName", errors.New("cluster name is missing"))
	}

	if c.ControlPlane == nil || c.ControlPlane.Endpoint == "" {
		fail("cluster.controlPlane.endpoint", errors.New("endpoint is missing"))
	} else {
		u, err := parseEndpoint(c.ControlPlane.Endpoint)
		if err != nil {
			fail("cluster.controlPlane.endpoint", err)
		}

		in.Endpoint = u

		if p := c.ControlPlane.LocalAPIServerPort; p != 0 {
			if p < 1 || p > 65535 {
				fail("cluster.controlPlane.localAPIServerPort", fmt.Errorf("invalid port %d", p))
			}

			in.LocalAPIServerPort = p
		}
	}

	if n := c.Network; n != nil {
		if n.DNSDomain != "" {
			in.DNSDomain = configs.NormalizeDNSDomain(n.DNSDomain)
		}

		if len(n.ServiceSubnets) > 0 {
			in.ServiceSubnets = append([]string(nil), n.ServiceSubnets...)
		}
	}

	if _, err := APIServerIPs(in.ServiceSubnets); err != nil {
		fail("cluster.network.serviceSubnets", err)
	}

	if c.APIServer != nil {
		in.CertSANs = append([]string(nil), c.APIServer.CertSANs...)
	}

	if c.AdminKubeconfig != nil && c.AdminKubeconfig.CertLifetime > 0 {
		in.AdminKubeconfigLifetime = c.AdminKubeconfig.CertLifetime
	}

	if !pki.ValidToken(c.Token) {
		fail("cluster.token", errors.New("bootstrap token is missing or not in the [a-z0-9]{6}.[a-z0-9]{16} format"))
	}

	var err error

	if in.CA, err = configCA(c.CA, cp); err != nil {
		fail("cluster.ca", err)
	}

	for i, ca := range c.AcceptedCAs {
		if _, err := pki.ParseCertificatePEM(ca.Crt); err != nil {
			fail("cluster.acceptedCAs["+strconv.Itoa(i)+"].crt", err)

			continue
		}

		in.AcceptedCAs = append(in.AcceptedCAs, []byte(ca.Crt))
	}

	if c.AggregatorCA != nil || cp {
		if in.AggregatorCA, err = configCA(c.AggregatorCA, cp); err != nil {
			fail("cluster.aggregatorCA", err)
		}
	}

	if cp || (c.Etcd != nil && c.Etcd.CA != nil) {
		var etcdCA *configs.PEMCertificateAndKey
		if c.Etcd != nil {
			etcdCA = c.Etcd.CA
		}

		if in.EtcdCA, err = configCA(etcdCA, cp); err != nil {
			fail("cluster.etcd.ca", err)
		}
	}

	if c.ServiceAccount != nil && len(c.ServiceAccount.Key) > 0 {
		in.ServiceAccountKey = []byte(c.ServiceAccount.Key)
		if _, err := serviceAccountPublicKey(in.ServiceAccountKey); err != nil {
			fail("cluster.serviceAccount.key", err)
		}
	} else if cp {
		fail("cluster.serviceAccount.key", errors.New("service account key is missing"))
	}

	if err := fromDocuments(cfg, &in); err != nil {
		errs = append(errs, err)
	}

	if len(errs) > 0 {
		return Inputs{}, fmt.Errorf("kubernetes secrets: %w", errors.Join(errs...))
	}

	return in, nil
}

// fromDocuments reads what the Kubernetes documents say that v1alpha1
// cannot: the whole encryption config, the aggregator's accepted CAs and
// the service accounts' accepted keys.
func fromDocuments(cfg *configs.Config, in *Inputs) error {
	in.AggregatorAcceptedCAs = configs.AggregatorAcceptedCAs(cfg)

	if sa := configs.DocumentOf[*configs.KubeServiceAccountConfig](cfg); sa != nil {
		for i, k := range sa.Accepted.PublicKeys {
			if b, _ := pem.Decode([]byte(k)); b == nil {
				return fmt.Errorf("KubeServiceAccountConfig.accepted.publicKeys[%d]: no PEM block", i)
			} else if _, err := x509.ParsePKIXPublicKey(b.Bytes); err != nil {
				return fmt.Errorf("KubeServiceAccountConfig.accepted.publicKeys[%d]: %w", i, err)
			}

			in.ServiceAccountAcceptedKeys = append(in.ServiceAccountAcceptedKeys, []byte(k))
		}
	}

	if enc := configs.EncryptionConfiguration(cfg); enc != nil {
		data, err := yaml.Marshal(enc)
		if err != nil {
			return fmt.Errorf("KubeEtcdEncryptionConfig.config: %w", err)
		}

		in.EncryptionConfig = data
	}

	return nil
}

// parseEndpoint accepts only what kubelets and kubectl can dial, so a typo
// fails here instead of as an unreachable server in every kubeconfig.
func parseEndpoint(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid endpoint %q: %w", s, err)
	}

	if u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("invalid endpoint %q: want https://HOST[:PORT]", s)
	}

	return u, nil
}

// configCA converts and checks a CA from the config. The key is required
// only where certificates are issued, so workers can run with the
// certificate alone.
func configCA(ca *configs.PEMCertificateAndKey, needKey bool) (*pki.CertAndKey, error) {
	if ca == nil || len(ca.Crt) == 0 {
		return nil, errors.New("certificate is missing")
	}

	pair := &pki.CertAndKey{Crt: []byte(ca.Crt), Key: []byte(ca.Key)}
	if len(ca.Key) == 0 {
		pair.Key = nil

		if needKey {
			return nil, errors.New("key is missing (control-plane nodes need it to issue certificates)")
		}
	}

	if err := pair.Validate(); err != nil {
		return nil, err
	}

	crt, err := pair.Certificate()
	if err != nil {
		return nil, err
	}

	if !crt.IsCA {
		return nil, errors.New("certificate is not a certificate authority")
	}

	return pair, nil
}

// serviceAccountPublicKey derives service-account.pub. Kubernetes signs
// tokens with RSA or ECDSA only, so an Ed25519 key is refused up front
// rather than by a crash-looping apiserver.
func serviceAccountPublicKey(keyPEM []byte) ([]byte, error) {
	key, err := pki.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}

	switch key.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey:
	default:
		return nil, fmt.Errorf("unsupported service account key %T: Kubernetes needs RSA or ECDSA", key)
	}

	return encodePublicKeyPEM(key.Public())
}

// AcceptedCABundle is the issuing CA certificate followed by the accepted
// CAs, duplicates dropped: the trust bundle that lets clients and kubelets
// keep working while the CA is rotated.
func AcceptedCABundle(in Inputs) []byte {
	var (
		buf  bytes.Buffer
		seen = map[string]bool{}
	)

	add := func(pemData []byte) {
		pemData = bytes.TrimSpace(pemData)
		if len(pemData) == 0 || seen[string(pemData)] {
			return
		}

		seen[string(pemData)] = true

		buf.Write(pemData)
		buf.WriteByte('\n')
	}

	if in.CA != nil {
		add(in.CA.Crt)
	}

	for _, ca := range in.AcceptedCAs {
		add(ca)
	}

	return buf.Bytes()
}

func (in *Inputs) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}

	return time.Now()
}

func (in *Inputs) validity() time.Duration {
	if in.Validity > 0 {
		return in.Validity
	}

	return DefaultValidity
}

func (in *Inputs) localPort() int {
	if in.LocalAPIServerPort > 0 {
		return in.LocalAPIServerPort
	}

	return DefaultLocalAPIServerPort
}

func (in *Inputs) dnsDomain() string {
	if in.DNSDomain != "" {
		return in.DNSDomain
	}

	return DefaultDNSDomain
}

func (in *Inputs) serviceSubnets() []string {
	if len(in.ServiceSubnets) > 0 {
		return in.ServiceSubnets
	}

	return []string{DefaultServiceSubnet}
}
