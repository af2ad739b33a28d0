package trustd_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	trustdapplet "github.com/talosbox/talosbox/applets/trustd"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/applet/applettest"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/trustd"
)

func TestMain(m *testing.M) { applettest.Main(m, trustdapplet.Applet) }

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()

	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}

	return p
}

// startTrustd runs the applet on a loopback port and returns its address
// once it serves.
func startTrustd(t *testing.T, args ...string) string {
	t.Helper()

	addr := fmt.Sprintf("127.0.0.1:%d", applettest.FreePort(t))
	p := applettest.Start(t, applettest.Command("trustd", append(args, "--listen", addr)...))
	p.WaitLine("trustd: serving on "+addr, 30*time.Second)

	t.Cleanup(func() {
		if code := p.Stop(10 * time.Second); code != 0 {
			t.Errorf("trustd exited %d after SIGTERM", code)
		}
	})

	return addr
}

// request asks trustd at addr to sign a new key's CSR with token,
// verifying trustd against ca, as a joining worker does.
func request(t *testing.T, addr, token string, ca *pki.CertAndKey) (caPEM, crtPEM []byte, err error) {
	t.Helper()

	key, err := pki.GenerateKeyPEM(pki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}

	csr, err := pki.NewCSR(key, pki.CSROptions{CommonName: "worker-1", IPs: []net.IP{net.ParseIP("10.5.0.7")}})
	if err != nil {
		t.Fatal(err)
	}

	trust, err := pki.CertPool(ca.Crt)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	return trustd.Sign(ctx, trustd.SignRequest{Endpoints: []string{addr}, Token: token, Trust: trust, CSR: csr, MaxBackoff: 100 * time.Millisecond})
}

// checkIssued verifies, independently of trustd's client, that crtPEM is
// a server certificate chaining to ca, for what the CSR asked.
func checkIssued(t *testing.T, ca *pki.CertAndKey, caPEM, crtPEM []byte) {
	t.Helper()

	if !bytes.Contains(caPEM, bytes.TrimSpace(ca.Crt)) {
		t.Error("the response's CAs do not include the OS CA")
	}

	crt, err := pki.ParseCertificatePEM(crtPEM)
	if err != nil {
		t.Fatal(err)
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.Crt)

	if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("issued certificate does not chain to the CA: %v", err)
	}

	if len(crt.IPAddresses) != 1 || !crt.IPAddresses[0].Equal(net.ParseIP("10.5.0.7")) {
		t.Errorf("issued certificate IPs %v", crt.IPAddresses)
	}
}

// The two ways to give trustd its CA and token: files and flags, or a
// control-plane machine config from gen config. Either way the token
// holder gets a certificate and a wrong token is refused, saying why.
func TestIssuesToTokenHolders(t *testing.T) {
	dir := t.TempDir()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "talos", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	gen, err := generate.Generate(generate.Options{ClusterName: "alone", Endpoint: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}

	cpYAML, err := gen.ControlPlane.Encode()
	if err != nil {
		t.Fatal(err)
	}

	osCA := &pki.CertAndKey{Crt: gen.ControlPlane.Machine.CA.Crt, Key: gen.ControlPlane.Machine.CA.Key}

	for _, tt := range []struct {
		name  string
		args  []string
		ca    *pki.CertAndKey
		token string
	}{
		{"flags", []string{"--ca-cert", writeFile(t, dir, "ca.crt", ca.Crt), "--ca-key", writeFile(t, dir, "ca.key", ca.Key),
			"--token-file", writeFile(t, dir, "token", []byte("abcdef.0123456789abcdef\n"))}, ca, "abcdef.0123456789abcdef"},
		{"config", []string{"--config", writeFile(t, dir, "controlplane.yaml", cpYAML)}, osCA, gen.ControlPlane.Machine.Token},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := startTrustd(t, tt.args...)

			caPEM, crtPEM, err := request(t, addr, tt.token, tt.ca)
			if err != nil {
				t.Fatalf("with the right token: %v", err)
			}

			checkIssued(t, tt.ca, caPEM, crtPEM)

			_, _, err = request(t, addr, "uvwxyz.0123456789abcdef", tt.ca)
			if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "wrong token: it is not this cluster's machine.token") {
				t.Errorf("with a wrong token: %v", err)
			}
		})
	}
}

// Bad flags and inputs are refused before anything is served.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "talos", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	gen, err := generate.Generate(generate.Options{ClusterName: "alone", Endpoint: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}

	workerYAML, err := gen.Worker.Encode()
	if err != nil {
		t.Fatal(err)
	}

	crt, key := writeFile(t, dir, "ca.crt", ca.Crt), writeFile(t, dir, "ca.key", ca.Key)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"--help"}, 0, "Usage: trustd --ca-cert FILE"},
		{"nothing", nil, 2, "no OS CA: give --ca-cert and --ca-key, or --config"},
		{"half a CA", []string{"--ca-cert", crt, "--token", "t"}, 2, "--ca-cert and --ca-key go together"},
		{"no token", []string{"--ca-cert", crt, "--ca-key", key}, 2, "no token: give --token or --token-file"},
		{"two tokens", []string{"--ca-cert", crt, "--ca-key", key, "--token", "t", "--token-file", "f"}, 2, "--token and --token-file are exclusive"},
		{"argument", []string{"--ca-cert", crt, "--ca-key", key, "--token", "t", "serve"}, 2, `unexpected argument "serve"`},
		{"bad ttl", []string{"--ca-cert", crt, "--ca-key", key, "--token", "t", "--ttl", "-1h"}, 2, "--ttl -1h0m0s: must be positive"},
		{"key swapped", []string{"--ca-cert", key, "--ca-key", crt, "--token", "t"}, 1, "ca.key with key"},
		{"empty token file", []string{"--ca-cert", crt, "--ca-key", key, "--token-file", writeFile(t, dir, "empty", []byte("\n"))}, 1, "the token is empty"},
		{"missing config", []string{"--config", filepath.Join(dir, "nope.yaml")}, 1, "read config: open " + filepath.Join(dir, "nope.yaml")},
		{"worker config", []string{"--config", writeFile(t, dir, "worker.yaml", workerYAML)}, 1, "machine.ca has no key (a worker's config?)"},
		{"not a config", []string{"--config", writeFile(t, dir, "junk.yaml", []byte("machine: {frobnicate: 1}\n"))}, 1, "junk.yaml"},
		{"port taken", []string{"--ca-cert", crt, "--ca-key", key, "--token", "t", "--listen", busy.Addr().String()}, 1, "address already in use"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer

			code := trustdapplet.Main(context.Background(), tt.args, applet.Env{Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
