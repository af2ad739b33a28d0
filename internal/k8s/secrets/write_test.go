package secrets

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/talosbox/talosbox/internal/pki"
)

// wantLayout is Talos's secrets layout: the names the static pod flags use.
var wantLayout = map[string]struct {
	uid   int
	files []string
}{
	"kube-apiserver": {65534, []string{
		"aggregator-ca.crt", "apiserver-kubelet-client.crt", "apiserver-kubelet-client.key", "apiserver.crt", "apiserver.key",
		"ca.crt", "encryptionconfig.yaml", "etcd-client-ca.crt", "etcd-client.crt", "etcd-client.key",
		"front-proxy-client.crt", "front-proxy-client.key", "service-account.key", "service-account.pub",
	}},
	"kube-controller-manager": {65535, []string{"ca.crt", "ca.key", "kubeconfig", "root-ca.crt", "service-account.key"}},
	"kube-scheduler":          {65536, []string{"kubeconfig"}},
}

func writeTestSecrets(t *testing.T, dir string, in Inputs, c *StaticPodCerts) string {
	t.Helper()

	version, err := WriteStaticPodSecrets(WriteOptions{Dir: dir, Chown: os.Geteuid() == 0}, in, c)
	if err != nil {
		t.Fatalf("WriteStaticPodSecrets: %v", err)
	}

	if len(version) != 16 {
		t.Errorf("version %q, want 16 hex digits", version)
	}

	return version
}

func TestWriteStaticPodSecretsLayout(t *testing.T) {
	cas := newTestCAs(t)
	in := testInputs(t, cas)
	dir := filepath.Join(t.TempDir(), "kubernetes")

	certs, err := IssueStaticPodCerts(in)
	if err != nil {
		t.Fatal(err)
	}

	writeTestSecrets(t, dir, in, certs)

	root := os.Geteuid() == 0
	if !root {
		t.Log("not root: ownership is not checked")
	}

	for comp, want := range wantLayout {
		compDir := filepath.Join(dir, comp)

		st, err := os.Stat(compDir)
		if err != nil {
			t.Fatal(err)
		}

		checkMeta(t, compDir, st, 0o755|os.ModeDir, want.uid, root)

		entries, err := os.ReadDir(compDir)
		if err != nil {
			t.Fatal(err)
		}

		var names []string

		for _, e := range entries {
			names = append(names, e.Name())

			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}

			checkMeta(t, filepath.Join(compDir, e.Name()), info, 0o400, want.uid, root)
		}

		if !slices.Equal(names, want.files) {
			t.Errorf("%s holds %q\nwant %q", comp, names, want.files)
		}
	}

	read := func(rel string) []byte {
		t.Helper()

		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}

		return data
	}

	for rel, want := range map[string][]byte{
		"kube-apiserver/ca.crt":                       AcceptedCABundle(in),
		"kube-apiserver/etcd-client-ca.crt":           cas.etcd.Crt,
		"kube-apiserver/etcd-client.crt":              certs.EtcdClient.Crt,
		"kube-apiserver/apiserver.key":                certs.APIServer.Key,
		"kube-apiserver/aggregator-ca.crt":            cas.aggregator.Crt,
		"kube-apiserver/front-proxy-client.crt":       certs.FrontProxyClient.Crt,
		"kube-apiserver/service-account.key":          cas.saKey,
		"kube-controller-manager/ca.crt":              cas.k8s.Crt,
		"kube-controller-manager/ca.key":              cas.k8s.Key,
		"kube-controller-manager/root-ca.crt":         AcceptedCABundle(in),
		"kube-controller-manager/service-account.key": cas.saKey,
		"kube-controller-manager/kubeconfig":          certs.ControllerManagerKubeconfig,
		"kube-scheduler/kubeconfig":                   certs.SchedulerKubeconfig,
	} {
		if !bytes.Equal(read(rel), want) {
			t.Errorf("%s has unexpected content", rel)
		}
	}

	for _, rel := range []string{"kube-apiserver/ca.crt", "kube-controller-manager/root-ca.crt"} {
		if pemCount(read(rel)) != 2 {
			t.Errorf("%s must hold all accepted CAs", rel)
		}
	}

	if pemCount(read("kube-controller-manager/ca.crt")) != 1 {
		t.Error("kube-controller-manager/ca.crt must be the issuing CA alone, which ca.key signs for")
	}

	if !strings.Contains(string(read("kube-apiserver/encryptionconfig.yaml")), "secretbox") {
		t.Error("encryptionconfig.yaml lacks the secretbox provider")
	}

	block, _ := pem.Decode(read("kube-apiserver/service-account.pub"))
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatal("service-account.pub is not a PUBLIC KEY PEM block")
	}

	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}

	sa, err := pki.ParsePrivateKeyPEM(cas.saKey)
	if err != nil {
		t.Fatal(err)
	}

	if !sa.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(pub) {
		t.Error("service-account.pub does not match service-account.key")
	}
}

func checkMeta(t *testing.T, path string, info os.FileInfo, mode os.FileMode, uid int, root bool) {
	t.Helper()

	if info.Mode() != mode {
		t.Errorf("%s: mode %v, want %v", path, info.Mode(), mode)
	}

	st := info.Sys().(*syscall.Stat_t)
	if root && (int(st.Uid) != uid || int(st.Gid) != uid) {
		t.Errorf("%s: owner %d:%d, want %d:%d", path, st.Uid, st.Gid, uid, uid)
	}
}

func TestWriteStaticPodSecretsVersion(t *testing.T) {
	cas := newTestCAs(t)
	in := testInputs(t, cas)
	dir := t.TempDir()

	certs, err := IssueStaticPodCerts(in)
	if err != nil {
		t.Fatal(err)
	}

	v1 := writeTestSecrets(t, dir, in, certs)

	apiserverCrt := filepath.Join(dir, "kube-apiserver", "apiserver.crt")

	before, err := os.Stat(apiserverCrt)
	if err != nil {
		t.Fatal(err)
	}

	// Drift in mode is repaired without rewriting the content.
	if err := os.Chmod(apiserverCrt, 0o644); err != nil {
		t.Fatal(err)
	}

	if v2 := writeTestSecrets(t, dir, in, certs); v2 != v1 {
		t.Errorf("same secrets, different versions: %s then %s", v1, v2)
	}

	after, err := os.Stat(apiserverCrt)
	if err != nil {
		t.Fatal(err)
	}

	if !os.SameFile(before, after) {
		t.Error("an unchanged file was replaced")
	}

	if after.Mode() != 0o400 {
		t.Errorf("mode after repair = %v, want 0400", after.Mode())
	}

	// A reissued certificate is a new version and lands on disk.
	renewed, err := IssueStaticPodCerts(in)
	if err != nil {
		t.Fatal(err)
	}

	changed := *certs
	changed.APIServer = renewed.APIServer

	v3 := writeTestSecrets(t, dir, in, &changed)
	if v3 == v1 {
		t.Error("version did not change with the apiserver certificate")
	}

	if data, _ := os.ReadFile(apiserverCrt); !bytes.Equal(data, renewed.APIServer.Crt) {
		t.Error("apiserver.crt was not replaced")
	}

	// Inputs that only feed files count too.
	in.AESCBCEncryptionSecret = testAESCBC
	if v4 := writeTestSecrets(t, dir, in, &changed); v4 == v3 {
		t.Error("version did not change with the encryption config")
	}

	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestWriteStaticPodSecretsErrors(t *testing.T) {
	cas := newTestCAs(t)

	certs, err := IssueStaticPodCerts(testInputs(t, cas))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		mutate func(*Inputs, *StaticPodCerts) *StaticPodCerts
		want   string
	}{
		{"no certificates", func(*Inputs, *StaticPodCerts) *StaticPodCerts { return nil }, "certificates are missing"},
		{"no CA key", func(in *Inputs, c *StaticPodCerts) *StaticPodCerts {
			in.CA = &pki.CertAndKey{Crt: cas.k8s.Crt}
			return c
		}, "cluster CA with its key"},
		{"no service account", func(in *Inputs, c *StaticPodCerts) *StaticPodCerts {
			in.ServiceAccountKey = nil
			return c
		}, "service account key is missing"},
		{"no encryption secret", func(in *Inputs, c *StaticPodCerts) *StaticPodCerts {
			in.SecretboxEncryptionSecret = ""
			return c
		}, "no encryption secret"},
		{"empty kubeconfig", func(_ *Inputs, c *StaticPodCerts) *StaticPodCerts {
			c.SchedulerKubeconfig = nil
			return c
		}, "kube-scheduler/kubeconfig would be empty"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs(t, cas)
			c := *certs
			dir := filepath.Join(t.TempDir(), "kubernetes")

			_, err := WriteStaticPodSecrets(WriteOptions{Dir: dir}, in, tt.mutate(&in, &c))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}

			if _, err := os.Stat(dir); err == nil {
				t.Error("a failed call must not create the secrets dir")
			}
		})
	}
}
