package k8s

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

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
