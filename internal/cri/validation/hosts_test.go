package validation_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/cri/validation"
)

const userHosts = "/etc/cri/conf.d/hosts"

func hostsFiles(files map[string]string) []validation.HostsFile {
	var out []validation.HostsFile

	for p, data := range files {
		out = append(out, validation.HostsFile{Path: p, Name: userHosts + "/" + p, Data: []byte(data)})
	}

	return out
}

// Registry hosts files, parsed by containerd's own hosts.toml parser.
func TestHosts(t *testing.T) {
	t.Parallel()

	const good = `server = "https://registry-1.docker.io"

[host."https://mirror.example:5000"]
  capabilities = ["pull", "resolve"]
  ca = "mirror-ca.crt"
  dial_timeout = "3s"
  [host."https://mirror.example:5000".header]
    x-custom = ["a", "b"]
`

	for _, tc := range []struct {
		name  string
		files map[string]string
		err   string // "" accepted
	}{
		{"good, with its CA beside it", map[string]string{"docker.io/hosts.toml": good, "docker.io/mirror-ca.crt": testCA}, ""},
		{"a port in the directory name", map[string]string{"reg.example_5000_/hosts.toml": "server = \"https://reg.example:5000\"\n"}, ""},
		{"not TOML", map[string]string{"docker.io/hosts.toml": "server = \n"},
			"/etc/cri/conf.d/hosts/docker.io/hosts.toml: containerd cannot parse it and would pull as if it were not there: "},
		{"capabilities as a string", map[string]string{"docker.io/hosts.toml": "[host.\"https://m.example\"]\ncapabilities = \"pull\"\n"},
			"containerd cannot parse it"},
		{"an unknown capability", map[string]string{"docker.io/hosts.toml": "[host.\"https://m.example\"]\ncapabilities = [\"pull\", \"fetch\"]\n"},
			"unknown capability fetch"},
		{"a dial_timeout that is no duration", map[string]string{"docker.io/hosts.toml": "[host.\"https://m.example\"]\ndial_timeout = \"soon\"\n"},
			`invalid duration "soon"`},
		{"a CA it names that is not there", map[string]string{"docker.io/hosts.toml": "[host.\"https://m.example\"]\nca = \"missing.crt\"\n"},
			"unable to read CA cert \"/etc/cri/conf.d/hosts/docker.io/missing.crt\""},
		{"a CA named where the node does not keep the tree", map[string]string{"docker.io/hosts.toml": "[host.\"https://m.example\"]\nca = \"/etc/cri/conf.d/hosts/docker.io/ca.crt\"\n", "docker.io/ca.crt": testCA},
			`/etc/cri/conf.d/hosts/docker.io/ca.crt is not where the node keeps the hosts tree: name the file relative to the registry directory ("ca.crt")`},
		{"a hosts.toml containerd never reads", map[string]string{"hosts.toml": "server = \"https://x\"\n"},
			"containerd reads only <registry>/hosts.toml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			err := validation.Hosts(hostsFiles(tc.files), userHosts)

			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error = %v, want %q", err, tc.err)
			}
		})
	}
}

// testCA is a self-signed CA certificate in PEM, made once.
var testCA = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}

	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}

	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}()
