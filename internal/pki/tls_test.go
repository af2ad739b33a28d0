package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// handshake runs a real TLS handshake over loopback TCP between
// a server that requires client certificates from clientCAs and a client
// presenting clientCert, and returns both sides' errors.
func handshake(t *testing.T, serverCert, clientCert *CertAndKey, serverCA, clientCA []byte) (roles []string, serverErr, clientErr error) {
	t.Helper()

	srvTLS, err := serverCert.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}

	cliTLS, err := clientCert.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}

	clientPool, err := CertPool(clientCA)
	if err != nil {
		t.Fatal(err)
	}

	serverPool, err := CertPool(serverCA)
	if err != nil {
		t.Fatal(err)
	}

	// Loopback TCP rather than net.Pipe: an unbuffered pipe deadlocks when
	// one side aborts mid-flight while the other is still writing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	cConn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}

	sConn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(10 * time.Second)
	_ = sConn.SetDeadline(deadline)
	_ = cConn.SetDeadline(deadline)

	server := tls.Server(sConn, &tls.Config{
		Certificates: []tls.Certificate{srvTLS},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientPool,
		MinVersion:   tls.VersionTLS13,
	})
	client := tls.Client(cConn, &tls.Config{
		Certificates: []tls.Certificate{cliTLS},
		RootCAs:      serverPool,
		ServerName:   "127.0.0.1",
		MinVersion:   tls.VersionTLS13,
	})

	done := make(chan error, 1)

	go func() {
		err := server.Handshake()
		if err == nil {
			peers := server.ConnectionState().PeerCertificates
			roles = peers[0].Subject.Organization
			_, err = server.Write([]byte("ok"))
		}

		_ = server.Close()
		done <- err
	}()

	// In TLS 1.3 the client finishes its handshake before the server has
	// checked the client certificate; the rejection shows on the first read.
	clientErr = client.Handshake()
	if clientErr == nil {
		buf := make([]byte, 2)
		_, clientErr = client.Read(buf)
	}

	_ = client.Close()
	serverErr = <-done

	return roles, serverErr, clientErr
}

func TestMutualTLS(t *testing.T) {
	b := newTestBundle(t)
	other := newTestBundle(t)

	server, err := NewServerCertificate(&b.Certs.OS, ServerOptions{IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}

	admin, err := b.AdminCertificate(nil, 0)
	if err != nil {
		t.Fatal(err)
	}

	reader, err := b.AdminCertificate([]string{"os:reader"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	foreign, err := other.AdminCertificate(nil, 0)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("admin accepted", func(t *testing.T) {
		roles, sErr, cErr := handshake(t, server, admin, b.Certs.OS.Crt, b.Certs.OS.Crt)
		if sErr != nil || cErr != nil {
			t.Fatalf("handshake failed: server %v, client %v", sErr, cErr)
		}

		if !slices.Equal(roles, []string{"os:admin"}) {
			t.Errorf("server saw roles %v, want [os:admin]", roles)
		}
	})

	t.Run("reader roles carried", func(t *testing.T) {
		roles, sErr, cErr := handshake(t, server, reader, b.Certs.OS.Crt, b.Certs.OS.Crt)
		if sErr != nil || cErr != nil {
			t.Fatalf("handshake failed: server %v, client %v", sErr, cErr)
		}

		if !slices.Equal(roles, []string{"os:reader"}) {
			t.Errorf("server saw roles %v, want [os:reader]", roles)
		}
	})

	t.Run("foreign CA refused", func(t *testing.T) {
		_, sErr, cErr := handshake(t, server, foreign, b.Certs.OS.Crt, b.Certs.OS.Crt)

		var unknown x509.UnknownAuthorityError
		if !errors.As(sErr, &unknown) {
			t.Fatalf("server error = %v, want x509.UnknownAuthorityError", sErr)
		}

		if cErr == nil || !strings.Contains(cErr.Error(), "bad certificate") && !strings.Contains(cErr.Error(), "unknown certificate authority") {
			t.Errorf("client error = %v, want a TLS alert", cErr)
		}
	})

	t.Run("server certificate is not a client certificate", func(t *testing.T) {
		_, sErr, _ := handshake(t, server, server, b.Certs.OS.Crt, b.Certs.OS.Crt)

		var invalid x509.CertificateInvalidError
		if !errors.As(sErr, &invalid) || invalid.Reason != x509.IncompatibleUsage {
			t.Fatalf("server error = %v, want incompatible key usage", sErr)
		}
	})

	t.Run("client refuses server from another CA", func(t *testing.T) {
		_, _, cErr := handshake(t, server, admin, other.Certs.OS.Crt, b.Certs.OS.Crt)

		var unknown x509.UnknownAuthorityError
		if !errors.As(cErr, &unknown) {
			t.Fatalf("client error = %v, want x509.UnknownAuthorityError", cErr)
		}
	})
}
