package talosctl_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// testSecretsInProcess reads the secrets resources of TestDay2Commands'
// control plane: an admin sees the config's root material and the
// certificate apid really serves; a reader sees the same resources with
// every key and token masked.
func testSecretsInProcess(t *testing.T, d *day2) {
	data, err := os.ReadFile(filepath.Join(d.dir, d.node.name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := configs.Decode(data)
	if err != nil {
		t.Fatal(err)
	}

	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	_, tokenSecret, _ := strings.Cut(cfg.Cluster.Token, ".")
	secrets := []string{cfg.Machine.Token, b64(cfg.Machine.CA.Key), b64(cfg.Cluster.CA.Key), b64(cfg.Cluster.Etcd.CA.Key), tokenSecret}

	for args, want := range map[string][]string{
		"get osrootsecrets -o yaml":         {"token: " + cfg.Machine.Token, "key: " + b64(cfg.Machine.CA.Key), "- 127.0.0.1"},
		"get etcdrootsecrets -o yaml":       {"key: " + b64(cfg.Cluster.Etcd.CA.Key)},
		"get kubernetesrootsecrets -o yaml": {"name: day2", "bootstrapTokenSecret: " + tokenSecret, "endpoint: https://10.5.0.2:6443", "local_endpoint: https://localhost:6443"},
		"get certsans -o yaml":              {"- 127.0.0.1", "- node-1", "fqdn: node-1"},
	} {
		out := d.ok(t, strings.Fields(args)...)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("talosctl %s lacks %q:\n%s", args, w, out)
			}
		}
	}

	// ApiCertificates ("certs") is what apid serves: the server
	// certificate this very call was answered with, of machine.ca.
	var api struct {
		Spec struct {
			Server struct{ Crt, Key configs.Base64 } `yaml:"server"`
		} `yaml:"spec"`
	}

	if err := yaml.Unmarshal([]byte(d.ok(t, "get", "certs", "-o", "yaml")), &api); err != nil {
		t.Fatal(err)
	}

	block, _ := pem.Decode(api.Spec.Server.Crt)
	if block == nil || !strings.Contains(string(api.Spec.Server.Key), "PRIVATE KEY") {
		t.Fatalf("ApiCertificates' server pair: %q", api.Spec.Server.Crt)
	}

	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cfg.Machine.CA.Crt)

	if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node-1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("apid's server certificate as ApiCertificates shows it: %v", err)
	}

	// A reader: the same resources, no secret.
	reader := filepath.Join(t.TempDir(), "talosconfig")
	d.ok(t, "config", "new", reader, "--roles", "os:reader")

	for _, typ := range []string{"osrootsecrets", "etcdrootsecrets", "kubernetesrootsecrets", "apicertificates", "certsans"} {
		out, errOut := newOutput(), newOutput()
		if code := ctl(context.Background(), out, errOut, "--talosconfig", reader, "-e", d.node.addr, "-n", d.node.addr, "get", typ, "-o", "yaml"); code != 0 {
			t.Errorf("a reader's get %s: exit %d: %s", typ, code, errOut)

			continue
		}

		for _, s := range append(secrets, "PRIVATE KEY", b64([]byte("-----BEGIN PRIVATE KEY"))[:20]) {
			if strings.Contains(out.String(), s) {
				t.Errorf("a reader's get %s shows the secret %.12q...:\n%s", typ, s, out)
			}
		}

		if typ != "certsans" && !strings.Contains(out.String(), configs.Redacted) {
			t.Errorf("a reader's get %s masks nothing:\n%s", typ, out)
		}
	}
}
