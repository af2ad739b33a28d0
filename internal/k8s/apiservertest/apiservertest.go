// Package apiservertest runs a real kube-apiserver (the binary `make
// images` builds from source) against a real embedded etcd on loopback,
// for tests of code that talks to Kubernetes. There is no controller
// manager or scheduler: objects are stored and validated, nothing acts on
// them.
package apiservertest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/pki"
)

// Options adjust the server.
type Options struct {
	// Version is the Kubernetes version to run; images.Kubernetes when
	// empty.
	Version string
	// ExtraArgs are added to the command line ("--flag=value"); a flag
	// given twice takes the last value.
	ExtraArgs []string
	// StartTimeout bounds the wait for /readyz; 2 minutes when zero.
	StartTimeout time.Duration
}

// Server is a running kube-apiserver.
type Server struct {
	URL    string       // https://127.0.0.1:<port>
	Config *rest.Config // an admin client (group system:masters)
	CA     *pki.CertAndKey
	// Dir holds the PKI files (pki/) and the server's log (kube-apiserver.log).
	Dir     string
	LogPath string

	cmd    *exec.Cmd
	exited chan struct{}
}

// ServiceCIDR is the service network the server allocates cluster IPs from,
// Talos's default.
const ServiceCIDR = "10.96.0.0/12"

// Start runs etcd and a kube-apiserver for the test and stops both at
// cleanup. It fails the test (telling to run make images) when there is no
// built kube-apiserver.
func Start(t testing.TB, o Options) *Server {
	t.Helper()

	bin := Binary(t, o.Version)
	dir := t.TempDir()

	endpoint, etcdPKI := startEtcd(t, filepath.Join(dir, "etcd"))

	files, ca, admin := writePKI(t, filepath.Join(dir, "pki"))

	timeout := o.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}

	s := &Server{CA: ca, Dir: dir, LogPath: filepath.Join(dir, "kube-apiserver.log")}

	// A port found free may be taken before the server binds it; then
	// the server exits at once and another port is tried.
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		s.URL = "https://127.0.0.1:" + strconv.Itoa(port)
		s.Config = &rest.Config{
			Host: s.URL,
			TLSClientConfig: rest.TLSClientConfig{
				CAData: ca.Crt, CertData: admin.Crt, KeyData: admin.Key,
			},
		}

		args := append([]string{
			"--etcd-servers=" + endpoint,
			"--etcd-cafile=" + filepath.Join(etcdPKI, etcd.CACertFile),
			"--etcd-certfile=" + filepath.Join(etcdPKI, etcd.AdminCertFile),
			"--etcd-keyfile=" + filepath.Join(etcdPKI, etcd.AdminKeyFile),
			"--client-ca-file=" + files.ca,
			"--tls-cert-file=" + files.crt,
			"--tls-private-key-file=" + files.key,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + files.sa,
			"--service-account-signing-key-file=" + files.sa,
			"--service-cluster-ip-range=" + ServiceCIDR,
			"--authorization-mode=RBAC",
			"--allow-privileged=true", // Talos sets it; privileged DaemonSets are refused without
			"--enable-bootstrap-token-auth=true",
			"--secure-port=" + strconv.Itoa(port),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--profiling=false",
		}, o.ExtraArgs...)

		err := s.start(t, bin, args, timeout)
		if err == nil {
			return s
		}

		log := s.Log()
		if attempt < 3 && strings.Contains(log, "address already in use") {
			continue
		}

		t.Fatalf("kube-apiserver: %v\n%s", err, tail(log, 60))
	}
}

func (s *Server) start(t testing.TB, bin string, args []string, timeout time.Duration) error {
	t.Helper()

	logf, err := os.Create(s.LogPath)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor

	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The server must not outlive a test binary that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}

	s.cmd, s.exited = cmd, make(chan struct{})

	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()

	if err := s.waitReady(timeout); err != nil {
		s.stop()

		return err
	}

	t.Cleanup(func() {
		s.stop()

		if t.Failed() {
			t.Logf("kube-apiserver log (%s):\n%s", s.LogPath, tail(s.Log(), 40))
		}
	})

	return nil
}

// waitReady polls /readyz (every poststart hook done, etcd reachable)
// until it answers 200, the server exits or the timeout passes.
func (s *Server) waitReady(timeout time.Duration) error {
	tr, err := rest.TransportFor(s.Config)
	if err != nil {
		return fmt.Errorf("client transport: %w", err)
	}

	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()

	var last string

	for {
		select {
		case <-s.exited:
			return fmt.Errorf("exited before it was ready: %s", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s (last: %s)", timeout, last)
		case <-tick.C:
		}

		if last = check(hc, s.URL); last == "" {
			return nil
		}
	}
}

// readyPaths must all answer 200: /readyz (every poststart hook done,
// etcd reachable), then the namespaces the system namespace controller
// creates shortly after, which tests create objects in.
var readyPaths = []string{"/readyz", "/api/v1/namespaces/kube-system", "/api/v1/namespaces/default"}

// check says what is not ready yet, "" once everything is.
func check(hc *http.Client, base string) string {
	for _, p := range readyPaths {
		resp, err := hc.Get(base + p)
		if err != nil {
			return err.Error()
		}

		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()

		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%s: %d %s", p, resp.StatusCode, tail(body.String(), 5))
		}
	}

	return ""
}

// stop asks the server to shut down and kills it if it takes long.
func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)

	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Log is what the server has printed so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogPath)

	return string(b)
}

// ClientConfig is a client authenticated as user in groups, with a
// certificate from the cluster CA, for tests of RBAC.
func (s *Server) ClientConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()

	pair := clientCert(t, s.CA, user, groups)
	cfg := rest.CopyConfig(s.Config)
	cfg.CertData, cfg.KeyData = pair.Crt, pair.Key

	return cfg
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}

	return strings.Join(ls, "\n")
}

func freePort(t testing.TB) int {
	t.Helper()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd runs a one-member etcd with fast raft timers (as etcdtest does)
// and returns its client URL and PKI directory, whose admin certificate
// the API server uses as its etcd client certificate.
func startEtcd(t testing.TB, dir string) (endpoint, pkiDir string) {
	t.Helper()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "etcd", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	lo := netip.MustParseAddr("127.0.0.1")
	pkiDir = filepath.Join(dir, "pki")

	for attempt := 0; ; attempt++ {
		client, peer := freePort(t), freePort(t)
		opts := etcd.Options{
			Name: "apiservertest", DataDir: filepath.Join(dir, "data"), PKIDir: pkiDir, CA: ca,
			IPs:               []netip.Addr{lo},
			ListenClientURLs:  etcd.URLs([]netip.Addr{lo}, client),
			ListenPeerURLs:    etcd.URLs([]netip.Addr{lo}, peer),
			HeartbeatInterval: 10 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
		}
		opts.AdvertiseClientURLs, opts.AdvertisePeerURLs = opts.ListenClientURLs, opts.ListenPeerURLs

		srv, err := etcd.Start(ctx, opts, etcd.Bootstrap)
		if err != nil && attempt < 3 {
			continue // a port was taken meanwhile
		}

		if err != nil {
			t.Fatalf("etcd: %v", err)
		}

		t.Cleanup(srv.Close)

		return opts.AdvertiseClientURLs[0], pkiDir
	}
}

type pkiFiles struct{ ca, crt, key, sa string }

// writePKI makes the cluster CA, the server's certificate (loopback and
// the kubernetes service names), an admin client certificate and the
// service-account signing key.
func writePKI(t testing.TB, dir string) (pkiFiles, *pki.CertAndKey, *pki.CertAndKey) {
	t.Helper()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "kubernetes", CommonName: "kubernetes", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	srv, err := pki.NewServerCertificate(ca, pki.ServerOptions{
		CommonName: "kube-apiserver", KeyType: pki.ECDSAP256,
		IPs:      []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		t.Fatal(err)
	}

	sa, err := pki.GenerateKeyPEM(pki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}

	f := pkiFiles{
		ca: filepath.Join(dir, "ca.crt"), crt: filepath.Join(dir, "apiserver.crt"),
		key: filepath.Join(dir, "apiserver.key"), sa: filepath.Join(dir, "service-account.key"),
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}

	for path, data := range map[string][]byte{f.ca: ca.Crt, f.crt: srv.Crt, f.key: srv.Key, f.sa: sa} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	return f, ca, clientCert(t, ca, "apiservertest-admin", []string{"system:masters"})
}

// clientCert issues a client certificate: the API server takes the user
// from the common name and the groups from the organizations.
func clientCert(t testing.TB, ca *pki.CertAndKey, user string, groups []string) *pki.CertAndKey {
	t.Helper()

	key, err := pki.GenerateKeyPEM(pki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}

	csr, err := pki.NewCSR(key, pki.CSROptions{CommonName: user, Organizations: groups})
	if err != nil {
		t.Fatal(err)
	}

	crt, err := pki.SignCSR(ca, csr, pki.SignOptions{TTL: 24 * time.Hour, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}

	return &pki.CertAndKey{Crt: crt, Key: key}
}

// UserConfig is a client of the server authenticated as user in groups
// (a client certificate from its CA): "system:node:n1" in "system:nodes"
// is a kubelet's identity, which the Node authorizer scopes to that node
// when the server runs with --authorization-mode=Node,RBAC.
func (s *Server) UserConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()

	c := clientCert(t, s.CA, user, groups)

	return &rest.Config{
		Host:            s.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CA.Crt, CertData: c.Crt, KeyData: c.Key},
	}
}

// TLSConfig is the admin client's TLS configuration, for code that does
// not take a rest.Config.
func (s *Server) TLSConfig(t testing.TB) *tls.Config {
	t.Helper()

	cfg, err := rest.TLSConfigFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}

	return cfg
}
