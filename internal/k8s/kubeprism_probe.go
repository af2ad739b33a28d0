package k8s

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// APIServerProbe returns a Prism probe that asks an API server's /readyz
// over TLS, as a load balancer in front of API servers must: one that
// accepts connections with no etcd behind it (left running by a reset
// node) answers 500 there. The server's certificate must chain to ca (any
// name: upstreams are addresses); nil ca skips that check.
//
// The API servers refuse anonymous requests, so the probe presents the
// certificate and key in certFile (the kubelet's client certificate, a
// PEM holding both) when it can read one. Before the kubelet has one (its
// first bootstrap), an answer of 401 or 403 counts as serving: that much
// TLS and HTTP works, and nothing better can be known.
func APIServerProbe(ca *x509.CertPool, certFile string) func(ctx context.Context, upstream string) error {
	return func(ctx context.Context, upstream string) error {
		cfg := &tls.Config{
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: true, //nolint:gosec // the chain is verified below, without a host name
			VerifyConnection: func(cs tls.ConnectionState) error {
				if ca == nil || len(cs.PeerCertificates) == 0 {
					return nil
				}

				inter := x509.NewCertPool()
				for _, c := range cs.PeerCertificates[1:] {
					inter.AddCert(c)
				}

				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: ca, Intermediates: inter})

				return err
			},
		}

		anonymous := true

		if pem, err := os.ReadFile(certFile); err == nil && certFile != "" {
			if cert, err := tls.X509KeyPair(pem, pem); err == nil {
				cfg.Certificates = []tls.Certificate{cert}
				anonymous = false
			}
		}

		tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()

		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+upstream+"/readyz", nil)
		if err != nil {
			return err
		}

		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()

		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case anonymous && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
			return nil
		}

		// The first failing check names what is wrong ("[-]etcd failed").
		var failed string

		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "[-]") {
				failed = ": " + line

				break
			}
		}

		return fmt.Errorf("%s/readyz: %s%s", upstream, resp.Status, failed)
	}
}
