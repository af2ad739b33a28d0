package secrets

import (
	"net/netip"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// Namespace is Talos's secrets namespace.
const Namespace = "secrets"

// The types and their IDs, as Talos has them.
const (
	OSRootType         = "OSRootSecrets.secrets.talos.dev"
	OSRootID           = "os"
	EtcdRootType       = "EtcdRootSecrets.secrets.talos.dev"
	EtcdRootID         = "etcd"
	KubernetesRootType = "KubernetesRootSecrets.secrets.talos.dev"
	KubernetesRootID   = "k8s"
	CertSANType        = "CertSANs.secrets.talos.dev"
	CertSANAPIID       = "api"
	APIType            = "ApiCertificates.secrets.talos.dev"
	APIID              = "api"
)

// CertAndKey is a PEM certificate with its key (Talos's
// PEMEncodedCertificateAndKey): base64 in YAML, as in the machine config.
type CertAndKey struct {
	Crt configs.Base64 `yaml:"crt"`
	Key configs.Base64 `yaml:"key,omitempty"`
}

// Cert is a PEM certificate alone.
type Cert struct {
	Crt configs.Base64 `yaml:"crt"`
}

// OSRootSpec is the Talos API's root material: machine.ca (its key on
// control planes only), machine.acceptedCAs, machine.certSANs split into
// addresses and names, and machine.token.
type OSRootSpec struct {
	IssuingCA       *CertAndKey  `yaml:"issuingCA"`
	AcceptedCAs     []Cert       `yaml:"acceptedCAs"`
	CertSANIPs      []netip.Addr `yaml:"certSANIPs"`
	CertSANDNSNames []string     `yaml:"certSANDNSNames"`
	Token           string       `yaml:"token"`
}

// RedactedYAML masks the CA's key and the token.
func (s OSRootSpec) RedactedYAML() ([]byte, error) { return redacted(s, "issuingCA.key", "token") }

// EtcdRootSpec is cluster.etcd.ca, on control planes.
type EtcdRootSpec struct {
	EtcdCA *CertAndKey `yaml:"etcdCA"`
}

// RedactedYAML masks the CA's key.
func (s EtcdRootSpec) RedactedYAML() ([]byte, error) { return redacted(s, "etcdCA.key") }

// KubernetesRootSpec is the cluster's Kubernetes root material, with
// Talos's keys (local_endpoint included): the CAs, the service account
// key, the encryption secrets and the bootstrap token, on control planes.
type KubernetesRootSpec struct {
	Name                      string      `yaml:"name"`
	Endpoint                  string      `yaml:"endpoint"`
	LocalEndpoint             string      `yaml:"local_endpoint"`
	CertSANs                  []string    `yaml:"certSANs"`
	DNSDomain                 string      `yaml:"dnsDomain"`
	IssuingCA                 *CertAndKey `yaml:"issuingCA"`
	AcceptedCAs               []Cert      `yaml:"acceptedCAs"`
	AggregatorCA              *CertAndKey `yaml:"aggregatorCA"`
	ServiceAccount            string      `yaml:"serviceAccount,omitempty"`
	AESCBCEncryptionSecret    string      `yaml:"aesCBCEncryptionSecret"`
	BootstrapTokenID          string      `yaml:"bootstrapTokenID"`
	BootstrapTokenSecret      string      `yaml:"bootstrapTokenSecret"`
	SecretboxEncryptionSecret string      `yaml:"secretboxEncryptionSecret"`
}

// RedactedYAML masks every key and secret; the certificates, names and
// the bootstrap token's public ID stay.
func (s KubernetesRootSpec) RedactedYAML() ([]byte, error) {
	return redacted(s, "issuingCA.key", "aggregatorCA.key", "serviceAccount", "aesCBCEncryptionSecret", "bootstrapTokenSecret", "secretboxEncryptionSecret")
}

// CertSANSpec is what the node's API certificate names: its addresses,
// loopback, its hostname and FQDN, and machine.certSANs.
type CertSANSpec struct {
	IPs      []netip.Addr `yaml:"ips"`
	DNSNames []string     `yaml:"dnsNames"`
	FQDN     string       `yaml:"fqdn"`
}

// RedactedYAML is the spec itself: names and addresses are no secret
// (Talos marks the type sensitive with its whole namespace).
func (s CertSANSpec) RedactedYAML() ([]byte, error) { return yaml.Marshal(s) }

// APICertsSpec is what the node's API (apid) serves with: the CAs it
// accepts client certificates from, its server certificate, and the
// os:impersonator client certificate it forwards calls to other nodes
// with (issued at the first forward, on control planes).
type APICertsSpec struct {
	AcceptedCAs []Cert      `yaml:"acceptedCAs"`
	Client      *CertAndKey `yaml:"client,omitempty"`
	Server      *CertAndKey `yaml:"server"`
}

// RedactedYAML masks the keys.
func (s APICertsSpec) RedactedYAML() ([]byte, error) { return redacted(s, "client.key", "server.key") }

// redacted encodes spec with the scalars at paths (dotted keys) that
// are set replaced by configs.Redacted, as a redacted config shows them.
func redacted(spec any, paths ...string) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(spec); err != nil {
		return nil, err
	}

	var walk func(n *yaml.Node, path string)

	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], strings.TrimPrefix(path+"."+n.Content[i].Value, "."))
			}
		case yaml.ScalarNode:
			if n.Value != "" && slices.Contains(paths, path) {
				n.Value, n.Tag, n.Style = configs.Redacted, "!!str", yaml.DoubleQuotedStyle
			}
		}
	}

	walk(&n, "")

	return yaml.Marshal(&n)
}

// The resource types.
type (
	OSRoot         = bus.Typed[OSRootSpec]
	EtcdRoot       = bus.Typed[EtcdRootSpec]
	KubernetesRoot = bus.Typed[KubernetesRootSpec]
	CertSAN        = bus.Typed[CertSANSpec]
	APICerts       = bus.Typed[APICertsSpec]
)

// Definitions are this package's types, for the registry behind
// `talosctl get` (which adds the plural, singular and initials: osrs,
// ers, krs, csan... as Talos's auto-aliases), all sensitive.
var Definitions = []bus.Definition{
	{Type: OSRootType, DefaultNamespace: Namespace, Sensitive: true},
	{Type: EtcdRootType, DefaultNamespace: Namespace, Sensitive: true},
	{Type: KubernetesRootType, DefaultNamespace: Namespace, Sensitive: true},
	{Type: CertSANType, DefaultNamespace: Namespace, Sensitive: true,
		PrintColumns: []bus.PrintColumn{{Name: "FQDN", JSONPath: "{.fqdn}"}}},
	// "certs" is ours: the node's certificates, as the day-2 list names
	// them; Talos's own names (apicertificates, ac) work too.
	{Type: APIType, DefaultNamespace: Namespace, Aliases: []string{"certs"}, Sensitive: true},
}
