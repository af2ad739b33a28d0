package configs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func publicKeyPEM(t *testing.T) string {
	t.Helper()

	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}

	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func TestKubeServiceAccountConfig(t *testing.T) {
	key := pemOf(t, "KubeServiceAccountConfig", "privateKey")
	pub := publicKeyPEM(t)

	doc := func(extra string) string {
		return "kind: KubeServiceAccountConfig\nissuer:\n  privateKey: " + indentPEM(key, 4) + "  issuerURL: https://base:6443\n" + extra
	}

	runKubeCases(t, []kubeCase{
		{name: "key folds; issuers, keys and audiences are read from the document",
			doc: doc("accepted:\n  publicKeys:\n    - " + indentPEM(pub, 6) + "  issuers: [https://old:6443]\n  audiences: [https://base:6443, vault]\n"),
			fold: func(t *testing.T, cfg *configs.Config) {
				if string(cfg.Cluster.ServiceAccount.Key) != key {
					t.Error("cluster.serviceAccount.key is not the document's")
				}

				sa := configs.DocumentOf[*configs.KubeServiceAccountConfig](cfg)
				if sa.Accepted.Issuers[0] != "https://old:6443" || len(sa.Accepted.Audiences) != 2 || !strings.Contains(sa.Accepted.PublicKeys[0], "PUBLIC KEY") {
					t.Errorf("accepted %+v", sa.Accepted)
				}
			}},
		{name: "unknown field", doc: doc("accepted:\n  keys: []\n"), decodeErr: `unknown field "keys" in KubeServiceAccountConfig.accepted`},
		{name: "wrong type", doc: "kind: KubeServiceAccountConfig\nissuer: x\n", decodeErr: "KubeServiceAccountConfig.issuer: expected a mapping"},
		{name: "no key", doc: "kind: KubeServiceAccountConfig\nissuer:\n  issuerURL: https://base:6443\n",
			err: "KubeServiceAccountConfig.issuer.privateKey: service issuer private key is required"},
		{name: "key not PEM", doc: "kind: KubeServiceAccountConfig\nissuer:\n  privateKey: bm9wZQ==\n  issuerURL: https://base:6443\n",
			err: "KubeServiceAccountConfig.issuer.privateKey: service issuer private key is invalid: no PEM blocks found"},
		{name: "no issuer URL", doc: "kind: KubeServiceAccountConfig\nissuer:\n  privateKey: " + indentPEM(key, 4),
			err: "KubeServiceAccountConfig.issuer.issuerURL: service issuer URL is required"},
		{name: "bad accepted issuer", doc: doc("accepted:\n  issuers: [old]\n"), err: "KubeServiceAccountConfig.accepted.issuers[0]: invalid issuer URL old"},
		{name: "bad accepted key", doc: doc("accepted:\n  publicKeys: [nope]\n"), err: "KubeServiceAccountConfig.accepted.publicKeys[0]: accepted public key: no PEM block found"},
		{name: "only on control planes", worker: true, doc: doc(""),
			err: "KubeServiceAccountConfig: document kind KubeServiceAccountConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "cluster:\n  serviceAccount:\n    key: " + b64(key) + "\n",
			err: "KubeServiceAccountConfig: the service account key is already set in the v1alpha1 document (cluster.serviceAccount)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeServiceAccountConfig\naccepted:\n  audiences: [vault]\n", check: func(t *testing.T, cfg *configs.Config) {
			if sa := configs.DocumentOf[*configs.KubeServiceAccountConfig](cfg); len(sa.Accepted.Audiences) != 1 || sa.Issuer.PrivateKey != key {
				t.Errorf("%+v", sa.Accepted)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeServiceAccountConfig/issuer/issuerURL", "value": "https://new:6443"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if sa := configs.DocumentOf[*configs.KubeServiceAccountConfig](cfg); sa.Issuer.IssuerURL != "https://new:6443" {
				t.Errorf("issuer %q", sa.Issuer.IssuerURL)
			}
		}},
	})
}
