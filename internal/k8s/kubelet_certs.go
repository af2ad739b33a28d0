package k8s

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
