package k8s

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
)

// kubeletClientCert is the kubelet's current client certificate, which
// its certificate manager keeps under KubeletCertDir.
const kubeletClientCert = "kubelet-client-current.pem"

// trustKey identifies the CAs the kubelet must trust and be trusted by.
func trustKey(cas [][]byte) string {
	sum := sha256.Sum256(render.KubeletCABundle(cas))

	return hex.EncodeToString(sum[:])
}

// refreshKubeletCredentials makes the kubelet's credentials follow the
// cluster's CAs (cluster.ca and cluster.acceptedCAs), as Talos's kubelet
// service does when they change: a client certificate none of them
// verifies is removed with the kubeconfig, so the kubelet bootstraps
// again with the bootstrap token and gets one from the new CA; a
// kubeconfig that stays gets them all as its certificate-authority-data,
// so it trusts an API server whose certificate the new CA issued.
// removed says whether the credentials were dropped.
func refreshKubeletCredentials(root string, cas [][]byte) (removed bool, err error) {
	certDir := filepath.Join(root, constants.KubeletCertDir)
	kubeconfig := filepath.Join(root, constants.KubeletKubeconfigPath)

	cert, err := readClientCert(filepath.Join(certDir, kubeletClientCert))
	if err != nil {
		return false, err
	}

	if cert != nil && !verifiedBy(cert, cas) {
		if err := os.RemoveAll(certDir); err != nil {
			return false, fmt.Errorf("kubelet credentials: %w", err)
		}

		if err := os.Remove(kubeconfig); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("kubelet credentials: %w", err)
		}

		return true, nil
	}

	return false, setKubeconfigCAs(kubeconfig, render.KubeletCABundle(cas))
}

// readClientCert is the first leaf certificate of a PEM file; nil when
// there is no file.
func readClientCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("kubelet credentials: %w", err)
	}

	for {
		var block *pem.Block

		block, data = pem.Decode(data)
		if block == nil {
			return nil, nil
		}

		if block.Type != "CERTIFICATE" {
			continue
		}

		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("kubelet credentials: %s: %w", path, err)
		}

		if !cert.IsCA {
			return cert, nil
		}
	}
}

func verifiedBy(cert *x509.Certificate, cas [][]byte) bool {
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AppendCertsFromPEM(ca)
	}

	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})

	return err == nil
}

// setKubeconfigCAs puts bundle in every cluster of a kubeconfig (when it
// exists and differs).
func setKubeconfigCAs(path string, bundle []byte) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}

	if err != nil {
		return fmt.Errorf("kubelet kubeconfig: %w", err)
	}

	changed := false

	for _, c := range cfg.Clusters {
		if string(c.CertificateAuthorityData) != string(bundle) || c.CertificateAuthority != "" {
			c.CertificateAuthorityData, c.CertificateAuthority = bundle, ""
			changed = true
		}
	}

	if !changed {
		return nil
	}

	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubelet kubeconfig: %w", err)
	}

	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("kubelet kubeconfig: %w", err)
	}

	return nil
}

// ClientCertPoll paces the look for the kubelet's first client certificate.
const ClientCertPoll = 250 * time.Millisecond

// restartOnClientCert restarts a kubelet that starts without a client
// certificate once it has one. The kubelet starts before the API server
// can approve its CSR (a control plane's own API server is among its
// static pods), and by the time the certificate comes its node
// registration retries every 7 s and its CSINode set-up, which needs the
// registered Node, has backed off to its 15 s step: the node turned
// Ready up to 20 s after it could have (measured: registered 4 s after
// the certificate, Ready 15 s after that). Restarted, the kubelet
// registers at once; its pods keep running meanwhile.
func (kl *kubelet) restartOnClientCert(ctx context.Context, log io.Writer) {
	path := filepath.Join(kl.k.root(), constants.KubeletCertDir, kubeletClientCert)
	if _, err := os.Stat(path); err == nil {
		return
	}

	go func() {
		if !waitForFile(ctx, path, ClientCertPoll) {
			return
		}

		fmt.Fprintln(log, "the kubelet has its client certificate: restarting it, so that it registers the node now")

		if err := kl.node.RestartService(context.WithoutCancel(ctx), KubeletServiceID); err != nil {
			fmt.Fprintf(log, "restart the kubelet: %v\n", err)
		}
	}()
}

// waitForFile is true once path exists, false if ctx ends first.
func waitForFile(ctx context.Context, path string, poll time.Duration) bool {
	t := time.NewTicker(poll)
	defer t.Stop()

	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}

		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
