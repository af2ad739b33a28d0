package k8s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// apiServer is an HTTPS upstream that asks for a client certificate of
// its CA, as kube-apiserver does with anonymous auth off, and answers
// /readyz with 200 while ready and with 500 and a failed etcd check
// otherwise (an API server whose etcd went away).
type apiServer struct {
	srv   *httptest.Server
	ready atomic.Bool
}

func (s *apiServer) addr() string { return s.srv.Listener.Addr().String() }

// testPKI is a CA, a server certificate of it for 127.0.0.1 and a client
// certificate of it in one PEM file, as the kubelet keeps its own.
type testPKI struct {
	ca       *pki.CertAndKey
	pool     *x509.CertPool
	server   tls.Certificate
	certFile string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()

	ca, err := pki.NewCA(pki.CAOptions{CommonName: "kubernetes"})
	if err != nil {
		t.Fatal(err)
	}

	srv, err := pki.NewServerCertificate(ca, pki.ServerOptions{CommonName: "kube-apiserver", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}

	cli, err := pki.NewClientCertificate(ca, pki.ClientOptions{Roles: []string{"system:nodes"}})
	if err != nil {
		t.Fatal(err)
	}

	server, err := tls.X509KeyPair(srv.Crt, srv.Key)
	if err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(t.TempDir(), "kubelet-client-current.pem")
	if err := os.WriteFile(file, append(append([]byte{}, cli.Crt...), cli.Key...), 0o600); err != nil {
		t.Fatal(err)
	}

	pool, err := pki.CertPool(ca.Crt)
	if err != nil {
		t.Fatal(err)
	}

	return testPKI{ca: ca, pool: pool, server: server, certFile: file}
}

func startAPIServer(t *testing.T, p testPKI, ready bool) *apiServer {
	t.Helper()

	s := &apiServer{}
	s.ready.Store(ready)

	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}

		if r.URL.Path != "/readyz" {
			io.WriteString(w, "ok") //nolint:errcheck // a test server
			return
		}

		if !s.ready.Load() {
			http.Error(w, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
			return
		}

		io.WriteString(w, "ok") //nolint:errcheck // a test server
	}))
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}, ClientCAs: p.pool, ClientAuth: tls.VerifyClientCertIfGiven}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)

	return s
}

func TestAPIServerProbe(t *testing.T) {
	p := newTestPKI(t)
	other := newTestPKI(t)
	ready, orphan := startAPIServer(t, p, true), startAPIServer(t, p, false)
	ctx := context.Background()

	for _, tc := range []struct {
		name     string
		pool     *x509.CertPool
		certFile string
		up       string
		want     string // "" when it serves
	}{
		{"ready, with the kubelet's certificate", p.pool, p.certFile, ready.addr(), ""},
		{"no etcd behind it", p.pool, p.certFile, orphan.addr(), "500 Internal Server Error: [-]etcd failed"},
		// Before the kubelet has a certificate, 401 is as much as can be known.
		{"no certificate yet", p.pool, filepath.Join(t.TempDir(), "none.pem"), ready.addr(), ""},
		{"another cluster's API server", other.pool, p.certFile, ready.addr(), "certificate signed by unknown authority"},
		{"nothing listens", p.pool, p.certFile, closedAddr(t), "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := APIServerProbe(tc.pool, tc.certFile)(ctx, tc.up)

			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("probe: %v, want serving", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("probe: %v, want %q", err, tc.want)
			}
		})
	}
}

// An API server that accepts connections but does not serve (a reset
// node's orphan) is passed over, and the connections already joined to
// one that stops serving are closed so that their clients go elsewhere.
func TestPrismLeavesAnUpstreamThatDoesNotServe(t *testing.T) {
	p := newTestPKI(t)
	first, second := startAPIServer(t, p, false), startAPIServer(t, p, true)

	prism := &Prism{Probe: APIServerProbe(p.pool, p.certFile)}
	prism.SetUpstreams([]string{first.addr(), second.addr()})
	addr, _ := servePrism(t, prism)

	if !prism.Check(context.Background()) {
		t.Fatal("Check: nothing serves")
	}

	if got := prism.Healthy(); len(got) != 1 || got[0] != second.addr() {
		t.Fatalf("healthy %v, want only %s", got, second.addr())
	}

	// The kubelet's view: a kept-alive HTTPS connection through KubePrism.
	var dials atomic.Int32

	cert, err := tls.LoadX509KeyPair(p.certFile, p.certFile)
	if err != nil {
		t.Fatal(err)
	}

	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)

	get := func() string {
		t.Helper()

		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://kubeprism/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()

		// Read to the end, or the connection is not kept.
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status is the answer

		return resp.Status
	}

	if got := get(); got != "200 OK" {
		t.Fatalf("through kubeprism: %s, want the serving upstream's 200", got)
	}

	// The first comes back and the second loses its etcd: the next check
	// ends the kept connection, and the next request reaches the first.
	first.ready.Store(true)
	second.ready.Store(false)

	prism.Check(context.Background())

	if got := get(); got != "200 OK" || dials.Load() != 2 {
		t.Fatalf("after the check: %s over %d connections, want 200 OK over a second one", got, dials.Load())
	}

	// With nothing serving, connections are left alone: a slow API server
	// is better than none.
	first.ready.Store(false)

	if prism.Check(context.Background()) {
		t.Fatal("Check: something serves")
	}

	if got := get(); got != "500 Internal Server Error" || dials.Load() != 2 {
		t.Fatalf("with nothing serving: %s over %d connections, want the kept connection's answer", got, dials.Load())
	}
}
