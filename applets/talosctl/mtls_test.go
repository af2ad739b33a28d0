package talosctl_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

// TestGeneratedTalosconfigMutualTLS: the talosconfig written by gen config
// completes a real mutual-TLS handshake with a server whose certificate is
// signed by the bundle's OS CA and which demands client certificates from
// that CA, and a talosconfig from another cluster is refused.
func TestGeneratedTalosconfigMutualTLS(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.yaml")

	for _, args := range [][]string{
		{"gen", "secrets", "-o", secrets},
		{"gen", "config", "ours", "https://127.0.0.1:6443", "--with-secrets", secrets, "-t", "talosconfig", "-o", filepath.Join(dir, "ours")},
		{"gen", "config", "theirs", "https://127.0.0.1:6443", "-t", "talosconfig", "-o", filepath.Join(dir, "theirs")},
	} {
		if code, _, stderr := runCtl(args...); code != 0 {
			t.Fatalf("talosctl %v: %s", args, stderr)
		}
	}

	bundle, err := pki.LoadBundle(secrets)
	if err != nil {
		t.Fatal(err)
	}

	serverPair, err := pki.NewServerCertificate(&bundle.Certs.OS, pki.ServerOptions{CommonName: "node", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}

	serverCert, err := serverPair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}

	clientCAs, err := pki.CertPool(bundle.Certs.OS.Crt)
	if err != nil {
		t.Fatal(err)
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{serverCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
		MinVersion:   tls.VersionTLS13,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	roles := make(chan []string, 2)

	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}

			tc := c.(*tls.Conn)                              //nolint:forcetypeassert // tls.Listen
			tc.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck

			if tc.Handshake() == nil {
				roles <- tc.ConnectionState().PeerCertificates[0].Subject.Organization
			}

			tc.Close()
		}
	}()

	if err := dialWith(t, filepath.Join(dir, "ours"), ln.Addr().String()); err != nil {
		t.Fatalf("our own talosconfig was refused: %v", err)
	}

	if got := <-roles; len(got) != 1 || got[0] != "os:admin" {
		t.Fatalf("server saw roles %v, want [os:admin]", got)
	}

	err = dialWith(t, filepath.Join(dir, "theirs"), ln.Addr().String())
	if err == nil {
		t.Fatal("a talosconfig from another cluster completed the handshake")
	}

	// The other cluster's client also does not trust our server.
	if !errors.As(err, new(*tls.CertificateVerificationError)) && !errors.As(err, new(x509.UnknownAuthorityError)) {
		t.Fatalf("handshake failed, but not on verification: %v", err)
	}
}

func dialWith(t *testing.T, path, addr string) error {
	t.Helper()

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := talosconfig.Parse(data)
	if err != nil {
		t.Fatal(err)
	}

	_, ctx, err := cfg.Current("")
	if err != nil {
		t.Fatal(err)
	}

	ca, client, err := ctx.Credentials()
	if err != nil {
		t.Fatal(err)
	}

	cert, err := client.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}

	roots, err := pki.CertPool(ca)
	if err != nil {
		t.Fatal(err)
	}

	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      roots,
		ServerName:   "127.0.0.1",
		MinVersion:   tls.VersionTLS13,
	})
	if err != nil {
		return err
	}
	defer conn.Close()

	// TLS 1.3 reports a refused client certificate on the first read.
	conn.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck

	_, err = conn.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("handshake outcome unknown: read timed out")
	}

	var alert tls.AlertError
	if errors.As(err, &alert) {
		return err
	}

	return nil
}
