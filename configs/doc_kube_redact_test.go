package configs_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// TestKubeDocumentsRedacted: every secret the Kubernetes documents hold
// (the Kubernetes and aggregator CA keys, the service account key, the
// encryption secrets) is masked in the redacted encoding, and nothing
// else is.
func TestKubeDocumentsRedacted(t *testing.T) {
	base := kubeCase{v1: "apiVersion: v1alpha1\nkind: KubeEtcdEncryptionConfig\nconfig:\n  resources:\n    - resources: [configmaps]\n      providers:\n" +
		"        - aescbc:\n            keys:\n              - name: key1\n                secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n        - identity: {}\n"}

	cfg, _, err := configs.Load(base.text(t), configs.ModeContainer)
	if err != nil {
		t.Fatal(err)
	}

	plain, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	red, err := cfg.EncodeRedacted()
	if err != nil {
		t.Fatal(err)
	}

	secrets := []string{
		pemOf(t, "KubeAPIServerCAConfig", "key"), pemOf(t, "KubeAggregatorCAConfig", "key"), pemOf(t, "KubeServiceAccountConfig", "privateKey"),
		"45yd2Ke+sytiICojDf8aibTfgt99nzJmO53cjDqrCto=", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	}

	for _, s := range secrets {
		line := strings.SplitN(strings.TrimPrefix(s, "-----BEGIN EC PRIVATE KEY-----\n"), "\n", 2)[0]

		if !strings.Contains(string(plain), line) {
			t.Fatalf("the test's secret %q is not in the config", line)
		}

		if strings.Contains(string(red), line) {
			t.Errorf("the redacted encoding holds %q", line)
		}
	}

	if strings.Contains(string(red), "PRIVATE KEY") {
		t.Errorf("the redacted encoding holds a private key:\n%s", red)
	}

	// What is not secret stays: the structure, the certificates, the key
	// names.
	for _, keep := range []string{"issuingCA:", "BEGIN CERTIFICATE", "- name: key1", "- configmaps", "issuerURL: https://base:6443", `secret: "******"`, `privateKey: "******"`} {
		if !strings.Contains(string(red), keep) {
			t.Errorf("the redacted encoding lost %q", keep)
		}
	}

	// The redacted encoding is still YAML with the documents' structure
	// (keys are never masked).
	dec := yaml.NewDecoder(bytes.NewReader(red))

	for n := 0; ; n++ {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			if n != len(cfg.Documents)+1 {
				t.Errorf("%d documents redacted, want %d", n, len(cfg.Documents)+1)
			}

			break
		} else if err != nil {
			t.Fatalf("the redacted encoding is not YAML: %v", err)
		}
	}
}
