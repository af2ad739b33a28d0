package apid

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/trustd"
)

// renewTimeout bounds a renewal from trustd made during a handshake; the
// current certificate is kept when it fails, so a control plane that is
// briefly away does not take a worker's API down.
const renewTimeout = 15 * time.Second

// newRemoteIssuer is a worker's server certificate issuer: a key and CSR
// with the node's names, signed by trustd on the control plane.
func newRemoteIssuer(id *identity, cfg *configs.Config, opts identityOptions) *certIssuer {
	endpoints := func() []string {
		switch {
		case opts.trustdEndpoints != nil:
			return opts.trustdEndpoints
		case opts.controlPlane != nil:
			return opts.controlPlane(cfg)
		default:
			return trustdEndpoints(cfg)
		}
	}

	req := trustd.SignRequest{Token: cfg.Machine.Token, Trust: id.trust}

	ci := newIssuer(nil)
	ci.fetch = func(ctx context.Context, onError func(string, error)) (*pki.CertAndKey, error) {
		ips, dns := id.sans()
		r := req
		r.Endpoints, r.OnError = endpoints(), onError

		return trustd.IssueServerCertificate(ctx, r, trustd.ServerOptions{CommonName: id.hostname, IPs: ips, DNSNames: dns})
	}
	ci.issue = func() (*tls.Certificate, error) {
		ctx, cancel := context.WithTimeout(context.Background(), renewTimeout)
		defer cancel()

		return ci.fetchTLS(ctx, nil)
	}

	return ci
}

// trustdEndpoints are where a worker asks for its certificate: the host
// of the control-plane endpoint, on trustd's port.
func trustdEndpoints(cfg *configs.Config) []string {
	if cfg.Cluster == nil || cfg.Cluster.ControlPlane == nil {
		return nil
	}

	u, err := url.Parse(cfg.Cluster.ControlPlane.Endpoint)
	if err != nil || u.Hostname() == "" {
		return nil
	}

	return []string{net.JoinHostPort(u.Hostname(), fmt.Sprint(constants.TrustdPort))}
}

// fetchTLS asks trustd once (with its own retries until ctx ends).
func (ci *certIssuer) fetchTLS(ctx context.Context, onError func(string, error)) (*tls.Certificate, error) {
	return tlsCertificate(ci.fetch(ctx, onError))
}

// prefetch gets a worker's first certificate before the server starts,
// retrying until it has one or ctx ends, and logs each new failure.
func (ci *certIssuer) prefetch(ctx context.Context, log io.Writer) error {
	last := ""
	onError := func(endpoint string, err error) {
		if msg := err.Error(); msg != last {
			fmt.Fprintf(log, "[talos] apid: certificate from trustd at %s: %v\n", endpoint, err)
			last = msg
		}
	}

	for {
		c, err := ci.fetchTLS(ctx, onError)
		if err == nil {
			ci.set(c)
			fmt.Fprintf(log, "[talos] apid: server certificate issued by trustd, valid until %s\n", c.Leaf.NotAfter.UTC().Format(time.RFC3339))

			return nil
		}

		if ctx.Err() != nil {
			return ctx.Err()
		}

		// Refused outright (a wrong token): trustd answers the same until
		// the config changes, so ask again only now and then.
		onError("control plane", err)

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
		}
	}
}
