package apid

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/role"
)

// errAwaitingCert is why a worker's apid does not serve yet: it has no OS
// CA key, and its server certificate has not come from trustd yet.
var errAwaitingCert = errors.New("apid: waiting for a server certificate from trustd on the control plane")

// identityOptions are the server's settings an identity depends on.
type identityOptions struct {
	hostname        string   // overrides the node's hostname
	trustdEndpoints []string // override the control-plane endpoint's
	// controlPlane, when set, lists trustd endpoints for a config: the
	// control-plane endpoint and the control-plane nodes discovery knows.
	controlPlane func(*configs.Config) []string
}

// identity is what apid serves as, derived from the active config. A new
// one is made whenever the config or the stage changes.
type identity struct {
	// maintenance: no config yet, so no CA: server-only TLS and the
	// allow-list of maintenance methods.
	maintenance bool
	// err, when set, says why the node cannot serve (errAwaitingCert).
	err error
	// remote: a worker, whose server certificate comes from trustd.
	remote bool
	// local: the local socket's (ServeLocal): callers are the node's own
	// processes, served as os:reader.
	local bool

	cfg      *configs.Config
	ca       *pki.CertAndKey // the OS CA (issuing: machine.ca)
	trust    *x509.CertPool  // machine.ca + machine.acceptedCAs
	hostname string
	certSANs []string

	// trustKey changes when the mode or the trust material does; a change
	// restarts the server so that no connection outlives the trust it was
	// accepted under. Other changes (SANs, hostname) only renew the
	// server certificate.
	trustKey string

	// addresses lists the node's addresses; machine.LocalAddresses when nil
	// (tests replace it).
	addresses func() []net.IP

	server *certIssuer // serving certificate, renewed at half-life
	client *certIssuer // os:impersonator certificate for forwarding
}

// newIdentity derives the identity from the active config (nil in
// maintenance mode): the node's own decoded copy, from the bus. hostname
// overrides the node's hostname when set.
func newIdentity(cfg *configs.Config, opts identityOptions) (*identity, error) {
	hostname := opts.hostname

	if cfg == nil {
		id := &identity{maintenance: true, hostname: machine.HostnameOr(hostname, nil), trustKey: "maintenance"}
		id.server = newSelfSignedIssuer(id.hostname)

		return id, nil
	}

	id := &identity{cfg: cfg, hostname: machine.HostnameOr(hostname, cfg)}

	if cfg.Machine == nil || cfg.Machine.CA == nil || len(cfg.Machine.CA.Crt) == 0 {
		return nil, errors.New("apid: the active config has no machine.ca")
	}

	id.certSANs = slices.Clone(cfg.Machine.CertSANs)
	id.ca = &pki.CertAndKey{Crt: cfg.Machine.CA.Crt, Key: cfg.Machine.CA.Key}

	pems := [][]byte{cfg.Machine.CA.Crt}
	for _, a := range cfg.Machine.AcceptedCAs {
		pems = append(pems, a.Crt)
	}

	var err error
	if id.trust, err = pki.CertPool(pems...); err != nil {
		return nil, fmt.Errorf("apid: machine.ca/acceptedCAs: %w", err)
	}

	sum := sha256.Sum256(bytes.Join(append(pems, cfg.Machine.CA.Key), []byte{0}))
	id.trustKey = "mtls:" + hex.EncodeToString(sum[:])

	if len(id.ca.Key) == 0 {
		id.remote = true
		id.server = newRemoteIssuer(id, cfg, opts)
		id.server.covers = id.coversAddresses

		return id, nil
	}

	if err := id.ca.Validate(); err != nil {
		return nil, fmt.Errorf("apid: machine.ca: %w", err)
	}

	id.server = newIssuer(func() (*pki.CertAndKey, error) {
		ips, dns := id.sans()

		return pki.NewServerCertificate(id.ca, pki.ServerOptions{CommonName: id.hostname, IPs: ips, DNSNames: dns})
	})
	id.server.covers = id.coversAddresses
	id.client = newIssuer(func() (*pki.CertAndKey, error) {
		return pki.NewClientCertificate(id.ca, pki.ClientOptions{Roles: []string{string(role.Impersonator)}, TTL: pki.ServerCertValidity})
	})

	return id, nil
}

// sans are the server certificate's names: loopback, every address of
// the node, its hostname and machine.certSANs.
func (id *identity) sans() ([]net.IP, []string) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	dns := []string{"localhost"}

	addrs := id.addresses
	if addrs == nil {
		addrs = machine.LocalAddresses
	}

	for _, ip := range addrs() {
		if !slices.ContainsFunc(ips, ip.Equal) {
			ips = append(ips, ip)
		}
	}

	for _, name := range append([]string{id.hostname}, id.certSANs...) {
		if ip := net.ParseIP(name); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		} else if name != "" && !slices.Contains(dns, name) {
			dns = append(dns, name)
		}
	}

	return ips, dns
}

// coversAddresses says whether crt names every current address of the
// node, so a new address (a DHCP renumbering, a shared IP taken over) gets
// a certificate that clients dialling it can verify.
func (id *identity) coversAddresses(crt *x509.Certificate) bool {
	addrs := id.addresses
	if addrs == nil {
		addrs = machine.LocalAddresses
	}

	for _, ip := range addrs() {
		if !slices.ContainsFunc(crt.IPAddresses, ip.Equal) {
			return false
		}
	}

	return true
}

// isLocal says whether a node name ("host" or "host:port", as the node
// metadata carries it) names this apid. A bare host is local when it is
// this node's; host:port is local only with our own port, so several
// apids on one host (tests, host-network containers) can reach each other.
func (id *identity) isLocal(host, port, ownPort string) bool {
	if port != "" && port != ownPort {
		return false
	}

	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, id.hostname) {
		return true
	}

	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}

	if ip.IsLoopback() && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback)) {
		return true
	}

	return slices.ContainsFunc(machine.LocalAddresses(), ip.Equal)
}
