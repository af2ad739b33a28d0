package secrets

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/talosbox/talosbox/internal/atomicfile"
)

// DefaultDir is where Talos keeps the control-plane secrets.
const DefaultDir = "/system/secrets/kubernetes"

// Component directories under the secrets dir and the users the static
// pods run as (Talos' KubernetesAPIServerRunUser etc.; gid equals uid).
const (
	APIServerDir         = "kube-apiserver"
	ControllerManagerDir = "kube-controller-manager"
	SchedulerDir         = "kube-scheduler"

	APIServerUID         = 65534
	ControllerManagerUID = 65535
	SchedulerUID         = 65536
)

const (
	fileMode = 0o400
	dirMode  = 0o755
)

// WriteOptions say where the secrets go. Dir defaults to DefaultDir; Chown
// hands each component directory and its files to the component's user,
// which needs root.
type WriteOptions struct {
	Dir   string
	Chown bool
}

type secretFile struct {
	name string
	data []byte
}

type componentFiles struct {
	dir   string
	uid   int
	files []secretFile
}

// WriteStaticPodSecrets lays out the apiserver, controller-manager and
// scheduler secret directories. Unchanged files are left alone, changed
// ones are replaced atomically. The returned version is a hash of every
// file name and content: it changes exactly when a static pod would read
// something different, so it can drive pod restarts.
func WriteStaticPodSecrets(o WriteOptions, in Inputs, c *StaticPodCerts) (string, error) {
	comps, err := staticPodFiles(in, c)
	if err != nil {
		return "", fmt.Errorf("static pod secrets: %w", err)
	}

	dir := o.Dir
	if dir == "" {
		dir = DefaultDir
	}

	if err := os.MkdirAll(dir, dirMode); err != nil {
		return "", fmt.Errorf("static pod secrets: %w", err)
	}

	for _, comp := range comps {
		compDir := filepath.Join(dir, comp.dir)
		if err := ensureDir(compDir, comp.uid, o.Chown); err != nil {
			return "", fmt.Errorf("static pod secrets: %s: %w", comp.dir, err)
		}

		for _, f := range comp.files {
			if err := writeIfChanged(filepath.Join(compDir, f.name), f.data, comp.uid, o.Chown); err != nil {
				return "", fmt.Errorf("static pod secrets: %s: %w", comp.dir, err)
			}
		}
	}

	return secretsVersion(comps), nil
}

// staticPodFiles maps the secrets to the file names of REFERENCE §1.2, the
// names the Talos static pod flags point at.
func staticPodFiles(in Inputs, c *StaticPodCerts) ([]componentFiles, error) {
	if c == nil {
		return nil, errors.New("certificates are missing")
	}

	switch {
	case in.CA == nil || len(in.CA.Crt) == 0 || len(in.CA.Key) == 0:
		return nil, errors.New("cluster CA with its key is missing")
	case in.AggregatorCA == nil || len(in.AggregatorCA.Crt) == 0:
		return nil, errors.New("aggregator CA is missing")
	case in.EtcdCA == nil || len(in.EtcdCA.Crt) == 0:
		return nil, errors.New("etcd CA is missing")
	case len(in.ServiceAccountKey) == 0:
		return nil, errors.New("service account key is missing")
	}

	saPub, err := serviceAccountPublicKey(in.ServiceAccountKey)
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}

	encryption := in.EncryptionConfig
	if encryption == nil {
		if encryption, err = EncryptionConfig(in.SecretboxEncryptionSecret, in.AESCBCEncryptionSecret); err != nil {
			return nil, err
		}
	}

	// The issuing key's public key first, then the accepted ones; the
	// aggregator CA, then the accepted ones.
	saPub = pemBundle(saPub, in.ServiceAccountAcceptedKeys)
	aggregatorCAs := pemBundle(in.AggregatorCA.Crt, in.AggregatorAcceptedCAs)

	comps := []componentFiles{
		{dir: APIServerDir, uid: APIServerUID, files: []secretFile{
			{"etcd-client-ca.crt", in.EtcdCA.Crt},
			{"etcd-client.crt", c.EtcdClient.Crt},
			{"etcd-client.key", c.EtcdClient.Key},
			{"ca.crt", AcceptedCABundle(in)},
			{"apiserver.crt", c.APIServer.Crt},
			{"apiserver.key", c.APIServer.Key},
			{"apiserver-kubelet-client.crt", c.APIServerKubeletClient.Crt},
			{"apiserver-kubelet-client.key", c.APIServerKubeletClient.Key},
			{"service-account.pub", saPub},
			{"service-account.key", in.ServiceAccountKey},
			{"aggregator-ca.crt", aggregatorCAs},
			{"front-proxy-client.crt", c.FrontProxyClient.Crt},
			{"front-proxy-client.key", c.FrontProxyClient.Key},
			{"encryptionconfig.yaml", encryption},
		}},
		// ca.crt here is the issuing CA alone: the controller-manager signs
		// kubelet certificates with it, so it must match ca.key. root-ca.crt
		// is every accepted CA: what it publishes to pods as
		// kube-root-ca.crt, so that a pod started while a new CA is only
		// accepted trusts the API server once it serves under the new one
		// (Talos publishes the issuing CA alone, and its pods need a
		// restart after a rotation).
		{dir: ControllerManagerDir, uid: ControllerManagerUID, files: []secretFile{
			{"ca.crt", in.CA.Crt},
			{"root-ca.crt", AcceptedCABundle(in)},
			{"ca.key", in.CA.Key},
			{"service-account.key", in.ServiceAccountKey},
			{"kubeconfig", c.ControllerManagerKubeconfig},
		}},
		{dir: SchedulerDir, uid: SchedulerUID, files: []secretFile{
			{"kubeconfig", c.SchedulerKubeconfig},
		}},
	}

	// An empty file would only surface as a component failing to start.
	for _, comp := range comps {
		for _, f := range comp.files {
			if len(f.data) == 0 {
				return nil, fmt.Errorf("%s/%s would be empty", comp.dir, f.name)
			}
		}
	}

	return comps, nil
}

// secretsVersion hashes names and lengths too, so moving bytes between
// files cannot produce the same version.
func secretsVersion(comps []componentFiles) string {
	h := sha256.New()

	for _, comp := range comps {
		for _, f := range comp.files {
			for _, part := range [][]byte{[]byte(comp.dir + "/" + f.name), f.data} {
				_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
				h.Write(part)
			}
		}
	}

	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ensureDir creates dir and fixes the mode and owner of an existing one,
// since MkdirAll leaves those alone.
func ensureDir(dir string, uid int, chown bool) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}

	if err := os.Chmod(dir, dirMode); err != nil {
		return err
	}

	if chown {
		if err := os.Chown(dir, uid, uid); err != nil {
			return err
		}
	}

	return nil
}

// writeIfChanged leaves an identical file untouched apart from mode and
// owner, and otherwise replaces it atomically, owned by the component
// already when it appears under its name.
func writeIfChanged(path string, data []byte, uid int, chown bool) error {
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() {
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, data) {
			return fixMeta(path, st, uid, chown)
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	var opts []atomicfile.Option
	if chown {
		opts = append(opts, atomicfile.WithOwner(uid, uid))
	}

	return atomicfile.Write(path, data, fileMode, opts...)
}

func fixMeta(path string, st fs.FileInfo, uid int, chown bool) error {
	if st.Mode().Perm() != fileMode {
		if err := os.Chmod(path, fileMode); err != nil {
			return err
		}
	}

	if chown {
		return os.Chown(path, uid, uid)
	}

	return nil
}

// pemBundle is first followed by more, one PEM text after another; first
// alone, unchanged, when there is no more.
func pemBundle(first []byte, more [][]byte) []byte {
	if len(more) == 0 {
		return first
	}

	out := append(bytes.TrimSpace(slices.Clone(first)), '\n')

	for _, m := range more {
		out = append(append(out, bytes.TrimSpace(m)...), '\n')
	}

	return out
}
