package trustd

import (
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// ServerCertificate returns an Options.ServerCert that issues trustd's
// serving certificate from ca with opts' names (a control-plane node's
// addresses, hostname and machine.certSANs) and issues a new one once half
// of the current one's life has passed, as Talos renews its 24 h
// certificates every 12 h. Issuing is lazy: the handshake that needs a
// certificate makes it. opts.Now, when set, is also the renewal clock.
func ServerCertificate(ca *pki.CertAndKey, opts pki.ServerOptions) func() (*tls.Certificate, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}

	var (
		mu      sync.Mutex
		cur     *tls.Certificate
		renewAt time.Time
	)

	return func() (*tls.Certificate, error) {
		mu.Lock()
		defer mu.Unlock()

		if cur != nil && now().Before(renewAt) {
			return cur, nil
		}

		pair, err := pki.NewServerCertificate(ca, opts)
		if err != nil {
			return nil, fmt.Errorf("trustd: issue serving certificate: %w", err)
		}

		c, err := pair.TLSCertificate()
		if err != nil {
			return nil, fmt.Errorf("trustd: issue serving certificate: %w", err)
		}

		life := c.Leaf.NotAfter.Sub(c.Leaf.NotBefore)
		cur, renewAt = &c, c.Leaf.NotBefore.Add(life/2)

		return cur, nil
	}
}
