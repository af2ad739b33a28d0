package configs_test

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// secretsPatch adds to the full control-plane config the secrets it lacks.
const secretsPatch = `
machine:
  registries:
    config:
      mirror.example.com:
        auth: {auth: dXNlcjpwYXNz, identityToken: id-token-secret}
        tls: {clientIdentity: {crt: Y2VydA==, key: cmVnaXN0cnkta2V5LXNlY3JldA==}}
  network:
    interfaces:
      - interface: wg0
        wireguard: {privateKey: d2lyZWd1YXJkLXByaXZhdGUta2V5LXNlY3JldA==}
        vip: {ip: 10.0.0.100, hcloud: {apiToken: hcloud-token-secret}}
        vlans: [{vlanId: 5, vip: {ip: 10.0.5.100, equinixMetal: {apiToken: equinix-token-secret}}}]
cluster:
  aescbcEncryptionSecret: YWVzY2JjLXNlY3JldC1rZXktMzItYnl0ZXMtbG9uZyE=
`

func TestEncodeRedacted(t *testing.T) {
	t.Parallel()

	cfg := configWith(t, "controlplane", secretsPatch)
	m, c := cfg.Machine, cfg.Cluster
	iface := m.Network.Interfaces[0]
	reg := m.Registries.Config["mirror.example.com"]

	// Each secret, where it sits, and its value as the config holds it.
	secrets := []struct {
		path  string
		value []byte
	}{
		{"machine.token", []byte(m.Token)},
		{"machine.ca.key", m.CA.Key},
		{"machine.registries.config.mirror.example.com.auth.password", []byte(reg.Auth.Password)},
		{"machine.registries.config.mirror.example.com.auth.auth", []byte(reg.Auth.Auth)},
		{"machine.registries.config.mirror.example.com.auth.identityToken", []byte(reg.Auth.IdentityToken)},
		{"machine.registries.config.mirror.example.com.tls.clientIdentity.key", reg.TLS.ClientIdentity.Key},
		{"machine.systemDiskEncryption.ephemeral.keys.0.static.passphrase", []byte(m.SystemDiskEncryption.Ephemeral.Keys[0].Static.Passphrase)},
		{"machine.network.interfaces.0.wireguard.privateKey", []byte(iface.WireGuard.PrivateKey)},
		{"machine.network.interfaces.0.vip.hcloud.apiToken", []byte(iface.VIP.HCloud.APIToken)},
		{"machine.network.interfaces.0.vlans.0.vip.equinixMetal.apiToken", []byte(iface.VLANs[0].VIP.EquinixMetal.APIToken)},
		{"cluster.secret", []byte(c.Secret)},
		{"cluster.token", []byte(c.Token)},
		{"cluster.aescbcEncryptionSecret", []byte(c.AESCBCEncryptionSecret)},
		{"cluster.secretboxEncryptionSecret", []byte(c.SecretboxEncryptionSecret)},
		{"cluster.ca.key", c.CA.Key},
		{"cluster.aggregatorCA.key", c.AggregatorCA.Key},
		{"cluster.serviceAccount.key", c.ServiceAccount.Key},
		{"cluster.etcd.ca.key", c.Etcd.CA.Key},
	}

	out, err := cfg.EncodeRedacted()
	if err != nil {
		t.Fatal(err)
	}

	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("redacted config is not YAML: %v\n%s", err, out)
	}

	for _, s := range secrets {
		t.Run(s.path, func(t *testing.T) {
			if len(s.value) == 0 {
				t.Fatal("the test config lacks this secret")
			}

			// Neither the value nor its base64 (as Encode writes keys)
			// may appear anywhere.
			for _, form := range [][]byte{s.value, []byte(base64.StdEncoding.EncodeToString(s.value))} {
				if bytes.Contains(out, form) {
					t.Errorf("the redacted config holds the secret %.20q...", form)
				}
			}

			if got := lookup(doc, s.path); got != configs.Redacted {
				t.Errorf("%s = %v, want %q", s.path, got, configs.Redacted)
			}
		})
	}

	// Everything else is kept: certificates, names, settings.
	kept := map[string]any{
		"machine.ca.crt":                      base64.StdEncoding.EncodeToString(m.CA.Crt),
		"cluster.etcd.ca.crt":                 base64.StdEncoding.EncodeToString(c.Etcd.CA.Crt),
		"cluster.clusterName":                 c.ClusterName,
		"cluster.id":                          c.ID,
		"machine.network.interfaces.0.vip.ip": "10.0.0.100",
		"machine.registries.config.mirror.example.com.auth.username": "puller",
		"machine.systemDiskEncryption.ephemeral.keys.1.kms.endpoint": "https://kms.example.com:4050",
	}

	for path, want := range kept {
		if got := lookup(doc, path); got != want {
			t.Errorf("%s = %v, want it kept as %v", path, got, want)
		}
	}

	// The rest of the document is Encode's, line for line.
	full, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	if a, b := strings.Count(string(full), "\n"), strings.Count(string(out), "\n"); a != b {
		t.Errorf("redacted config has %d lines, the config %d", b, a)
	}
}

// Empty secrets stay empty: a worker holds no CA keys, and a reader
// learns that.
func TestEncodeRedactedLeavesAbsentSecretsOut(t *testing.T) {
	t.Parallel()

	out, err := configWith(t, "worker", "{}").EncodeRedacted()
	if err != nil {
		t.Fatal(err)
	}

	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"machine.ca.key", "cluster.ca.key", "cluster.serviceAccount.key", "cluster.etcd.ca.key"} {
		if got := lookup(doc, path); got != nil {
			t.Errorf("%s = %v in a worker's redacted config, want it absent", path, got)
		}
	}

	if got := lookup(doc, "machine.token"); got != configs.Redacted {
		t.Errorf("machine.token = %v, want %q", got, configs.Redacted)
	}
}

// lookup follows a dotted path through decoded YAML; list indexes are
// numbers, and map keys with dots are matched greedily.
func lookup(v any, path string) any {
	if path == "" {
		return v
	}

	switch v := v.(type) {
	case map[string]any:
		parts := strings.Split(path, ".")
		for i := len(parts); i > 0; i-- {
			if next, ok := v[strings.Join(parts[:i], ".")]; ok {
				return lookup(next, strings.Join(parts[i:], "."))
			}
		}
	case []any:
		head, rest, _ := strings.Cut(path, ".")
		for i, item := range v {
			if head == strconv.Itoa(i) {
				return lookup(item, rest)
			}
		}
	}

	return nil
}
