package apid

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/netip"
	"sync"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/secrets"
)

// certsOwner owns the certificate resources apid publishes.
const certsOwner = "secrets.APIController"

// certPublisher keeps the node's ApiCertificates and CertSANs resources
// in step with the certificates apid really serves and forwards with:
// each issuer tells it of every certificate it installs.
type certPublisher struct {
	store *bus.Store
	log   func(format string, args ...any)

	mu   sync.Mutex
	spec secrets.APICertsSpec
}

// hook makes id's issuers report to p. A maintenance identity's
// self-signed certificate is not published: there is no CA yet.
func (p *certPublisher) hook(id *identity) {
	if id == nil || id.maintenance || id.cfg == nil {
		return
	}

	accepted := acceptedCAs(id.cfg)

	if id.server != nil {
		id.server.onSet = func(c *tls.Certificate) { p.publish(accepted, false, c, id.hostname) }
	}

	if id.client != nil {
		id.client.onSet = func(c *tls.Certificate) { p.publish(accepted, true, c, id.hostname) }
	}
}

func (p *certPublisher) publish(accepted []secrets.Cert, client bool, c *tls.Certificate, hostname string) {
	pair, err := pemPair(c)
	if err != nil {
		p.log("[talos] apid: publish certificate: %v\n", err)

		return
	}

	p.mu.Lock()
	defer p.mu.Unlock()

	p.spec.AcceptedCAs = accepted
	if client {
		p.spec.Client = pair
	} else {
		p.spec.Server = pair
	}

	spec := p.spec
	ctx := context.Background()

	if err := storeTyped(ctx, p.store, secrets.APIType, secrets.APIID, spec); err != nil {
		p.log("[talos] apid: publish %s: %v\n", secrets.APIType, err)
	}

	if client || c.Leaf == nil {
		return
	}

	sans := secrets.CertSANSpec{DNSNames: c.Leaf.DNSNames, FQDN: hostname}
	for _, ip := range c.Leaf.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			sans.IPs = append(sans.IPs, a.Unmap())
		}
	}

	if err := storeTyped(ctx, p.store, secrets.CertSANType, secrets.CertSANAPIID, sans); err != nil {
		p.log("[talos] apid: publish %s: %v\n", secrets.CertSANType, err)
	}
}

// storeTyped writes spec as the secrets resource (typ, id), owned by
// apid.
func storeTyped[S any](ctx context.Context, store *bus.Store, typ, id string, spec S) error {
	_, err := store.Modify(ctx, bus.NewTyped(secrets.Namespace, typ, id, spec), func(r bus.Resource) error {
		res, ok := r.(*bus.Typed[S])
		if !ok {
			return fmt.Errorf("stored as %T, not %T", r, res)
		}

		*res.TypedSpec() = spec

		return nil
	}, bus.WithOwner(certsOwner))

	return err
}

// acceptedCAs are machine.ca and machine.acceptedCAs, as apid trusts them.
func acceptedCAs(cfg *configs.Config) []secrets.Cert {
	out := []secrets.Cert{{Crt: cfg.Machine.CA.Crt}}
	for _, a := range cfg.Machine.AcceptedCAs {
		out = append(out, secrets.Cert{Crt: a.Crt})
	}

	return out
}

// pemPair encodes a crypto/tls certificate (its leaf) and key as PEM.
func pemPair(c *tls.Certificate) (*secrets.CertAndKey, error) {
	if len(c.Certificate) == 0 {
		return nil, fmt.Errorf("no certificate")
	}

	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, err
	}

	return &secrets.CertAndKey{
		Crt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		Key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
	}, nil
}
