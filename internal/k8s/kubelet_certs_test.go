package k8s

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/pki"
)

// TestRefreshKubeletCredentials follows a kubelet through a CA rotation:
// its certificate of the old CA is kept while the old CA is accepted (and
// its kubeconfig learns the new CA), and removed, kubeconfig and all, once
// only the new CA is.
func TestRefreshKubeletCredentials(t *testing.T) {
	oldCA, err := pki.NewCA(pki.CAOptions{Organization: "kubernetes", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	newCA, err := pki.NewCA(pki.CAOptions{Organization: "kubernetes", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	client, err := pki.NewClientCertificate(oldCA, pki.ClientOptions{Roles: []string{"system:nodes"}})
	if err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	certDir := filepath.Join(root, constants.KubeletCertDir)
	kubeconfig := filepath.Join(root, constants.KubeletKubeconfigPath)

	for _, d := range []string{certDir, filepath.Dir(kubeconfig)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The certificate manager's file: certificate, then key.
	if err := os.WriteFile(filepath.Join(certDir, kubeletClientCert), append(bytes.Clone(client.Crt), client.Key...), 0o600); err != nil {
		t.Fatal(err)
	}

	kc := clientcmdapi.NewConfig()
	kc.Clusters["default"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:7445", CertificateAuthorityData: oldCA.Crt}

	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	caData := func() []byte {
		t.Helper()

		cfg, err := clientcmd.LoadFromFile(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}

		return cfg.Clusters["default"].CertificateAuthorityData
	}

	// The new CA accepted, then issuing with the old one accepted: the
	// certificate stays, the kubeconfig trusts both.
	for _, cas := range [][][]byte{{oldCA.Crt, newCA.Crt}, {newCA.Crt, oldCA.Crt}} {
		removed, err := refreshKubeletCredentials(root, cas)
		if err != nil || removed {
			t.Fatalf("with the old CA accepted: removed=%v, %v", removed, err)
		}

		if want := append(bytes.Clone(cas[0]), cas[1]...); !bytes.Equal(caData(), want) {
			t.Errorf("the kubeconfig's CA data is not the accepted CAs:\n%s", caData())
		}
	}

	// The old CA dropped: the certificate no accepted CA verifies goes,
	// with the kubeconfig, so the kubelet bootstraps again.
	removed, err := refreshKubeletCredentials(root, [][]byte{newCA.Crt})
	if err != nil || !removed {
		t.Fatalf("with only the new CA: removed=%v, %v", removed, err)
	}

	for _, p := range []string{certDir, kubeconfig} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}

	// A kubelet that never bootstrapped has nothing to refresh.
	if removed, err := refreshKubeletCredentials(root, [][]byte{newCA.Crt}); err != nil || removed {
		t.Errorf("no credentials: removed=%v, %v", removed, err)
	}
}

// restartRecorder is the node's service manager as the kubelet sees it:
// it records the restarts asked for.
type restartRecorder struct {
	Node
	restarts chan string
}

func (r *restartRecorder) RestartService(_ context.Context, id string) error {
	r.restarts <- id
	return nil
}

// TestRestartOnClientCert: a kubelet that starts without a client
// certificate is restarted once it has one; one that starts with it is
// left alone.
func TestRestartOnClientCert(t *testing.T) {
	root := t.TempDir()
	node := &restartRecorder{restarts: make(chan string, 2)}
	kl := &kubelet{k: New(Options{Root: root}), node: node}
	cert := filepath.Join(root, constants.KubeletCertDir, kubeletClientCert)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	kl.restartOnClientCert(ctx, io.Discard)

	if err := os.MkdirAll(filepath.Dir(cert), 0o700); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(cert, []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}

	select {
	case id := <-node.restarts:
		if id != KubeletServiceID {
			t.Errorf("restarted %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kubelet was not restarted once its certificate came")
	}

	// The restarted kubelet has its certificate: no restart is set up.
	kl.restartOnClientCert(ctx, io.Discard)
	cancel()

	if len(node.restarts) != 0 {
		t.Errorf("restarts %d, want none", len(node.restarts))
	}

	// A run that ends before a certificate comes stops looking.
	ended, stop := context.WithCancel(t.Context())
	stop()

	if waitForFile(ended, filepath.Join(root, "never"), time.Millisecond) {
		t.Error("waitForFile found a file that does not exist")
	}
}
