package secrets

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// TestRedactedYAML: a reader's view of each type keeps the certificates
// and names and masks every key and secret, and only those.
func TestRedactedYAML(t *testing.T) {
	pair := func(crt, key string) *CertAndKey {
		return &CertAndKey{Crt: configs.Base64(crt), Key: configs.Base64(key)}
	}

	for _, tc := range []struct {
		name         string
		spec         interface{ RedactedYAML() ([]byte, error) }
		secrets      []string
		kept         []string
		wantRedacted int
	}{
		{"os", OSRootSpec{IssuingCA: pair("os-ca-crt", "os-ca-key"), AcceptedCAs: []Cert{{Crt: configs.Base64("old-ca")}}, Token: "abc.def", CertSANDNSNames: []string{"node-1"}},
			[]string{"os-ca-key", "abc.def"}, []string{"os-ca-crt", "old-ca", "node-1"}, 2},
		{"os on a worker", OSRootSpec{IssuingCA: &CertAndKey{Crt: configs.Base64("os-ca-crt")}, Token: "abc.def"},
			[]string{"abc.def"}, []string{"os-ca-crt"}, 1},
		{"etcd", EtcdRootSpec{EtcdCA: pair("etcd-crt", "etcd-key")}, []string{"etcd-key"}, []string{"etcd-crt"}, 1},
		{"kubernetes", KubernetesRootSpec{
			Name: "c1", IssuingCA: pair("k8s-crt", "k8s-key"), AggregatorCA: pair("agg-crt", "agg-key"), ServiceAccount: "sa-key",
			AESCBCEncryptionSecret: "aes", SecretboxEncryptionSecret: "box", BootstrapTokenID: "tokid", BootstrapTokenSecret: "toksecret",
		}, []string{"k8s-key", "agg-key", "sa-key", "aes", "box", "toksecret"}, []string{"k8s-crt", "agg-crt", "tokid", "c1"}, 6},
		{"api", APICertsSpec{Server: pair("srv-crt", "srv-key"), Client: pair("cli-crt", "cli-key")}, []string{"srv-key", "cli-key"}, []string{"srv-crt", "cli-crt"}, 2},
		{"certsans", CertSANSpec{DNSNames: []string{"node-1"}, FQDN: "node-1"}, nil, []string{"node-1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.spec.RedactedYAML()
			if err != nil {
				t.Fatal(err)
			}

			var view map[string]any
			if err := yaml.Unmarshal(out, &view); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}

			// A value shows as itself, or base64 in the certificate fields.
			text := string(out)
			for _, v := range append(tc.secrets, tc.kept...) {
				enc := string(mustText(t, configs.Base64(v)))
				leaked := strings.Contains(text, " "+enc+"\n") || strings.Contains(text, " "+v+"\n")

				if want := !containsString(tc.secrets, v); leaked != want {
					t.Errorf("%q shown %v, want %v:\n%s", v, leaked, want, out)
				}
			}

			if n := strings.Count(text, `"`+configs.Redacted+`"`); n != tc.wantRedacted {
				t.Errorf("%d values redacted, want %d:\n%s", n, tc.wantRedacted, out)
			}
		})
	}
}

func mustText(t *testing.T, b configs.Base64) []byte {
	t.Helper()

	out, err := b.MarshalText()
	if err != nil {
		t.Fatal(err)
	}

	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}

	return false
}
