package cri

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/transfer/image"
	"github.com/containerd/containerd/v2/core/transfer/registry"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// The test binary runs containerd for the pull tests: TestMain (in
// health_test.go) calls containerdtest.Main.

// tlsRegistry serves an in-memory registry over TLS, with a certificate
// of its own CA (for 127.0.0.1) that nothing on this machine trusts,
// holding one image at repo. It returns the registry's host:port and its
// CA certificate, PEM-encoded.
func tlsRegistry(t *testing.T, repo string) (host, caPEM string) {
	t.Helper()

	srv := httptest.NewUnstartedServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the test's
	srv.StartTLS()
	t.Cleanup(srv.Close)

	host = strings.TrimPrefix(srv.URL, "https://")

	ref, err := name.ParseReference(host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}

	if err := remote.Write(ref, containerdtest.Image(t, map[string][]byte{"hello.txt": []byte("hello\n")}), remote.WithTransport(srv.Client().Transport)); err != nil {
		t.Fatal(err)
	}

	return host, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// TestTrustedRootsPull: a registry whose CA is only in a
// TrustedRootsConfig. The node writes the bundle and gives containerd the
// environment WriteTrustedRoots returns: containerd pulls from it (the
// pull resolves and fetches in the daemon, as the CRI's do). A containerd
// without it refuses the registry's certificate.
func TestTrustedRootsPull(t *testing.T) {
	const ref = "example.test/test/hello:v1"

	host, ca := tlsRegistry(t, "test/hello:v1")

	hosts := t.TempDir()
	containerdtest.MirrorOnly(t, hosts, "example.test", "https://"+host)

	cfg, err := configs.Decode([]byte("apiVersion: v1alpha1\nkind: TrustedRootsConfig\nname: test-registry-ca\ncertificates: |\n" +
		indent(ca, "  ")))
	if err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()

	env, err := WriteTrustedRoots(cfg, root)
	if err != nil {
		t.Fatal(err)
	}

	if want := "/etc/ssl/certs:/etc/pki/tls/certs:" + filepath.Join(root, "etc/ssl/certs"); env != want {
		t.Fatalf("SSL_CERT_DIR %q, want %q", env, want)
	}

	bundle, err := os.ReadFile(filepath.Join(root, TrustedRootsFile))
	if err != nil {
		t.Fatal(err)
	}

	if !strings.HasPrefix(string(bundle), "\ntest-registry-ca:\n=================\n-----BEGIN CERTIFICATE-----\n") {
		t.Errorf("bundle, as Talos heads each document's certificates:\n%s", bundle)
	}

	pull := func(sock string) error {
		ctx, cancel := context.WithTimeout(namespaces.WithNamespace(t.Context(), "k8s.io"), time.Minute)
		defer cancel()

		reg, err := registry.NewOCIRegistry(ctx, ref, registry.WithHostDir(hosts))
		if err != nil {
			return err
		}

		return containerdtest.Connect(t, sock).Transfer(ctx, reg, image.NewStore(ref))
	}

	if err := pull(containerdtest.Start(t, containerdtest.Options{Env: []string{"SSL_CERT_DIR=" + env}})); err != nil {
		t.Fatalf("pull with the trusted roots: %v", err)
	}

	if err := pull(containerdtest.Start(t, containerdtest.Options{})); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("pull without the trusted roots: %v, want the certificate refused", err)
	}
}

// TestWriteTrustedRoots: no TrustedRootsConfig, no bundle (the last
// boot's is removed) and nothing to add to the environment; on metal the
// bundle is in /etc/ssl/certs, which Go programs read anyway.
func TestWriteTrustedRoots(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, TrustedRootsFile)

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(path, []byte("the last boot's"), 0o644); err != nil {
		t.Fatal(err)
	}

	env, err := WriteTrustedRoots(&configs.Config{}, root)
	if err != nil || env != "" {
		t.Fatalf("WriteTrustedRoots = %q, %v; want no environment", env, err)
	}

	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the last boot's bundle is still there: %v", err)
	}

	if env, err := WriteTrustedRoots(&configs.Config{}, root); err != nil || env != "" {
		t.Errorf("again, with nothing to remove: %q, %v", env, err)
	}
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")

	return by + strings.Join(lines, "\n"+by) + "\n"
}
