package secrets

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// Subjects of the control-plane certificates, as Talos issues them.
const (
	APIServerCN           = "kube-apiserver"
	APIServerOrganization = "kube-master"
	KubeletClientCN       = "apiserver-kubelet-client"
	MastersGroup          = "system:masters"
	FrontProxyClientCN    = "front-proxy-client"
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
	TalosAdminCN          = "talos:admin"
	AdminCN               = "admin"
)

// Kubeconfig user and context names (suffixed with @<cluster>).
const (
	componentContext = "default"
	adminName        = "admin"
)

// notBeforeSkew backdates certificates so a peer whose clock lags a little
// still accepts a fresh one (Talos uses the same 10 s).
const notBeforeSkew = 10 * time.Second

// StaticPodCerts are the control plane's certificates and kubeconfigs.
type StaticPodCerts struct {
	APIServer, APIServerKubeletClient, FrontProxyClient, EtcdClient pki.CertAndKey

	ControllerManagerKubeconfig, SchedulerKubeconfig, LocalhostAdminKubeconfig []byte
}

// IssueStaticPodCerts issues everything the control-plane static pods need
// from the CAs in in. The CA, aggregator CA and etcd CA keys are required.
func IssueStaticPodCerts(in Inputs) (*StaticPodCerts, error) {
	if in.Endpoint == nil {
		return nil, errors.New("static pod certificates: endpoint is missing")
	}

	sans, err := apiServerSANs(&in)
	if err != nil {
		return nil, fmt.Errorf("apiserver certificate: %w", err)
	}

	var out StaticPodCerts

	leaves := []struct {
		name string
		dst  *pki.CertAndKey
		ca   *pki.CertAndKey
		spec leafSpec
	}{
		{"apiserver", &out.APIServer, in.CA, leafSpec{
			cn: APIServerCN, orgs: []string{APIServerOrganization}, server: true, sans: sans,
		}},
		{"apiserver-kubelet-client", &out.APIServerKubeletClient, in.CA, leafSpec{
			cn: KubeletClientCN, orgs: []string{MastersGroup},
		}},
		{"front-proxy-client", &out.FrontProxyClient, in.AggregatorCA, leafSpec{cn: FrontProxyClientCN}},
		{"etcd client", &out.EtcdClient, in.EtcdCA, leafSpec{cn: APIServerCN}},
	}

	for _, l := range leaves {
		pair, err := issueLeaf(l.ca, l.spec, in.now(), in.validity())
		if err != nil {
			return nil, fmt.Errorf("%s certificate: %w", l.name, err)
		}

		*l.dst = *pair
	}

	// Talos-internal admin access is to this node's own API server. The
	// controller-manager and the scheduler go through KubePrism when it is
	// on, which prefers that same API server but falls over to the others
	// while it is down; without KubePrism they use it alone, since the
	// cluster endpoint may be a load balancer that is not up before it.
	local := "https://" + net.JoinHostPort("localhost", strconv.Itoa(in.localPort()))
	components := local

	if in.KubePrismPort > 0 {
		components = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(in.KubePrismPort))
	}

	kubeconfigs := []struct {
		name           string
		dst            *[]byte
		server         string
		cn, org        string
		user, contextN string
	}{
		{"controller-manager", &out.ControllerManagerKubeconfig, components, ControllerManagerUser, ControllerManagerUser,
			ControllerManagerUser, componentContext},
		{"scheduler", &out.SchedulerKubeconfig, components, SchedulerUser, SchedulerUser, SchedulerUser, componentContext},
		{"localhost admin", &out.LocalhostAdminKubeconfig, local, TalosAdminCN, MastersGroup, adminName, adminName},
	}

	for _, k := range kubeconfigs {
		data, err := certKubeconfig(&in, k.server, k.cn, k.org, k.user, k.contextN, in.validity())
		if err != nil {
			return nil, fmt.Errorf("%s kubeconfig: %w", k.name, err)
		}

		*k.dst = data
	}

	return &out, nil
}

// APIServerIPs returns the first address of each service subnet, the
// ClusterIP of the "kubernetes" service (10.96.0.1 for 10.96.0.0/12).
func APIServerIPs(serviceSubnets []string) ([]netip.Addr, error) {
	return nthServiceIPs(serviceSubnets, 1)
}

// DNSServiceIPs returns the tenth address of each service subnet, the
// ClusterIP of the cluster DNS service (10.96.0.10 for 10.96.0.0/12).
func DNSServiceIPs(serviceSubnets []string) ([]netip.Addr, error) {
	return nthServiceIPs(serviceSubnets, 10)
}

func nthServiceIPs(serviceSubnets []string, n int) ([]netip.Addr, error) {
	if len(serviceSubnets) == 0 {
		return nil, errors.New("no service subnet")
	}

	out := make([]netip.Addr, 0, len(serviceSubnets))

	for _, s := range serviceSubnets {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("service subnet %q: %w", s, err)
		}

		prefix = prefix.Masked()
		ip := prefix.Addr()

		for range n {
			ip = ip.Next()
		}

		if !ip.IsValid() || !prefix.Contains(ip) {
			return nil, fmt.Errorf("service subnet %q is too small to hold address #%d", s, n)
		}

		out = append(out, ip)
	}

	return out, nil
}

// apiServerSANs lists every name and address clients reach the apiserver
// by: the endpoint, the user's extra SANs, the in-cluster service names and
// ClusterIP, this node, and loopback.
func apiServerSANs(in *Inputs) (sanSet, error) {
	var s sanSet

	s.add(in.Endpoint.Hostname())

	for _, san := range in.CertSANs {
		s.add(san)
	}

	domain := strings.TrimSuffix(in.dnsDomain(), ".")
	for _, name := range []string{
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + domain,
		"localhost", in.Hostname, in.FQDN,
	} {
		s.add(name)
	}

	ips, err := APIServerIPs(in.serviceSubnets())
	if err != nil {
		return sanSet{}, err
	}

	s.ips = append(s.ips, ips...)
	s.ips = append(s.ips, in.NodeAddresses...)
	s.ips = append(s.ips, netip.MustParseAddr("127.0.0.1"))
	s.normalize()

	return s, nil
}

// sanSet holds certificate SANs, split like the certificate stores them.
type sanSet struct {
	dns []string
	ips []netip.Addr
}

// add takes an IP or a DNS name, as cluster.apiServer.certSANs mixes both.
func (s *sanSet) add(v string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return
	}

	if ip, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil {
		s.ips = append(s.ips, ip)

		return
	}

	s.dns = append(s.dns, strings.ToLower(v))
}

// normalize sorts and deduplicates so the certificate does not change when
// only the order of the inputs does.
func (s *sanSet) normalize() {
	s.ips = slices.DeleteFunc(s.ips, func(ip netip.Addr) bool { return !ip.IsValid() })
	for i, ip := range s.ips {
		s.ips[i] = ip.Unmap().WithZone("")
	}

	slices.SortFunc(s.ips, netip.Addr.Compare)
	s.ips = slices.Compact(s.ips)

	slices.Sort(s.dns)
	s.dns = slices.Compact(s.dns)
}

func (s *sanSet) netIPs() []net.IP {
	out := make([]net.IP, 0, len(s.ips))
	for _, ip := range s.ips {
		out = append(out, net.IP(ip.AsSlice()))
	}

	return out
}

// leafSpec describes a leaf certificate; server selects serverAuth instead
// of clientAuth.
type leafSpec struct {
	cn     string
	orgs   []string
	server bool
	sans   sanSet
}

// issueLeaf signs a fresh ECDSA P-256 key. pki's helpers are not used
// because their subjects, usages and 1 min backdating differ from the
// Kubernetes certificates Talos issues.
func issueLeaf(ca *pki.CertAndKey, spec leafSpec, now time.Time, validity time.Duration) (*pki.CertAndKey, error) {
	caCrt, caKey, err := issuer(ca)
	if err != nil {
		return nil, err
	}

	key, err := pki.GenerateKey(pki.ECDSAP256)
	if err != nil {
		return nil, err
	}

	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}

	eku := x509.ExtKeyUsageClientAuth
	if spec.server {
		eku = x509.ExtKeyUsageServerAuth
	}

	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:             now.Add(-notBeforeSkew).UTC(),
		NotAfter:              now.Add(validity).UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{eku},
		BasicConstraintsValid: true,
		DNSNames:              spec.sans.dns,
		IPAddresses:           spec.sans.netIPs(),
	}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCrt, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}

	keyPEM, err := pki.EncodePrivateKeyPEM(key)
	if err != nil {
		return nil, err
	}

	return &pki.CertAndKey{Crt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Key: keyPEM}, nil
}

// issuer refuses a missing key or a non-CA certificate, so a worker config
// or a leaf pasted into the CA field fails with a clear message.
func issuer(ca *pki.CertAndKey) (*x509.Certificate, crypto.Signer, error) {
	if ca == nil || len(ca.Crt) == 0 {
		return nil, nil, errors.New("CA is missing")
	}

	if len(ca.Key) == 0 {
		return nil, nil, errors.New("CA key is missing")
	}

	if err := ca.Validate(); err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}

	crt, err := ca.Certificate()
	if err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}

	if !crt.IsCA {
		return nil, nil, errors.New("CA: certificate is not a certificate authority")
	}

	key, err := ca.Signer()
	if err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}

	return crt, key, nil
}

// NeedsRenewal reports whether a certificate should be reissued: once half
// of its lifetime has passed (Talos renews on a validity/2 ticker), when it
// is not valid at now, or when it does not parse.
func NeedsRenewal(certPEM []byte, now time.Time) bool {
	crt, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		return true
	}

	if now.Before(crt.NotBefore) || !now.Before(crt.NotAfter) {
		return true
	}

	half := crt.NotBefore.Add(crt.NotAfter.Sub(crt.NotBefore) / 2)

	return !now.Before(half)
}

func encodePublicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}

	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
