package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
)

// TrustedRootsFile is the node's CA bundle, where Talos keeps it: the
// certificates the config's TrustedRootsConfigs add (the node image ships
// no bundle of its own), and what machine.files append to it.
const TrustedRootsFile = "/etc/ssl/certs/ca-certificates"

// systemCertDirs are the directories Go programs read CA certificates
// from (crypto/x509 on Linux), which SSL_CERT_DIR replaces.
var systemCertDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}

// WriteTrustedRoots writes the bundle of cfg's TrustedRootsConfigs at
// TrustedRootsFile under root ("/" on metal; a node in a container writes
// under its own directory, as it does machine.files), replacing the last
// boot's, or removes it when the config has none. It returns the
// SSL_CERT_DIR that makes Go programs started from now on (containerd,
// which pulls the images, and machined's own pulls) read it besides the
// system's directories: "" when there is no bundle, or when root is "/",
// whose /etc/ssl/certs they read anyway.
func WriteTrustedRoots(cfg *configs.Config, root string) (string, error) {
	path := filepath.Join(root, TrustedRootsFile)

	bundle := configs.TrustedRootsBundle(cfg)
	if bundle == nil {
		// Looked up first: a read-only root refuses even the removal of
		// what it does not hold.
		if _, err := os.Lstat(path); err == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("trusted roots: %w", err)
			}
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("trusted roots: %w", err)
		}

		if err := atomicfile.Write(path, bundle, 0o644); err != nil {
			return "", fmt.Errorf("trusted roots: %w", err)
		}
	}

	if bundle == nil || filepath.Clean(root) == "/" {
		return "", nil
	}

	return strings.Join(append(systemCertDirs[:len(systemCertDirs):len(systemCertDirs)], filepath.Dir(path)), ":"), nil
}
