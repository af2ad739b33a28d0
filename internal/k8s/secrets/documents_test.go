package secrets

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// TestSecretsFromDocuments: what v1alpha1 cannot say and the Kubernetes
// documents do reaches the API server's files: the whole encryption
// config of a KubeEtcdEncryptionConfig, the aggregator's accepted CAs
// (after its CA) and the service accounts' accepted keys (after the
// issuing key's public key).
func TestSecretsFromDocuments(t *testing.T) {
	out, err := generate.Generate(generate.Options{ClusterName: "docs", Endpoint: "https://10.5.0.2:6443", Contract: generate.Current})
	if err != nil {
		t.Fatal(err)
	}

	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}

	pub := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	other := newTestCAs(t).aggregator.Crt

	data, err := out.ControlPlane.Encode()
	if err != nil {
		t.Fatal(err)
	}

	// The encryption config replaced whole (a strategic merge would add
	// to its lists), the others merged.
	encPatch, err := configpatch.Parse([]byte(`[{"op": "replace", "path": "/KubeEtcdEncryptionConfig/config", "value": {"resources": [{"resources": ["secrets", "configmaps"],
		"providers": [{"aescbc": {"keys": [{"name": "k1", "secret": "` + testSecretbox + `"}]}}, {"identity": {}}]}]}}]`))
	if err != nil {
		t.Fatal(err)
	}

	ps, err := configpatch.Parse([]byte(`apiVersion: v1alpha1
kind: KubeServiceAccountConfig
accepted:
  publicKeys:
    - |
` + indent(pub, "      ") + `
---
apiVersion: v1alpha1
kind: KubeAggregatorCAConfig
acceptedCAs:
  - |
` + indent(string(other), "    ")))
	if err != nil {
		t.Fatal(err)
	}

	if data, err = configpatch.Apply(data, append(encPatch, ps...)...); err != nil {
		t.Fatal(err)
	}

	cfg, _, err := configs.Load(data, configs.ModeContainer)
	if err != nil {
		t.Fatal(err)
	}

	in, err := FromConfig(cfg, "cp-1", "", nil)
	if err != nil {
		t.Fatal(err)
	}

	certs, err := IssueStaticPodCerts(in)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if _, err := WriteStaticPodSecrets(WriteOptions{Dir: dir}, in, certs); err != nil {
		t.Fatal(err)
	}

	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, APIServerDir, name))
		if err != nil {
			t.Fatal(err)
		}

		return b
	}

	var enc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Resources  []struct {
			Resources []string         `json:"resources"`
			Providers []map[string]any `json:"providers"`
		} `json:"resources"`
	}

	if err := yaml.UnmarshalStrict(read("encryptionconfig.yaml"), &enc); err != nil {
		t.Fatal(err)
	}

	if enc.Kind != "EncryptionConfiguration" || enc.APIVersion != "apiserver.config.k8s.io/v1" || len(enc.Resources) != 1 ||
		len(enc.Resources[0].Resources) != 2 || enc.Resources[0].Providers[0]["aescbc"] == nil {
		t.Errorf("encryption config %+v", enc)
	}

	if agg := read("aggregator-ca.crt"); pemCount(agg) != 2 || !bytes.Contains(agg, bytes.TrimSpace(other)) ||
		!bytes.HasPrefix(agg, bytes.TrimSpace(in.AggregatorCA.Crt)) {
		t.Errorf("aggregator-ca.crt holds %d certificates, the aggregator CA first", pemCount(agg))
	}

	if sa := read("service-account.pub"); strings.Count(string(sa), "BEGIN PUBLIC KEY") != 2 || !strings.Contains(string(sa), strings.TrimSpace(pub)) {
		t.Errorf("service-account.pub:\n%s", sa)
	}
}

func indent(s, pad string) string {
	return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad)
}
