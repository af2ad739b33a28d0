package apid

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/role"
)

// machineConfigSpecs reads the active MachineConfig the three ways a
// client can: Get, the first List item and the first Watch event.
func machineConfigSpecs(t *testing.T, rc resource.ResourceServiceClient) map[string]*resource.Resource {
	t.Helper()

	ctx := testCtx(t)

	got, err := rc.Get(ctx, &resource.GetRequest{Type: "mc", Id: config.ActiveConfigID})
	if err != nil {
		t.Fatal(err)
	}

	ls, err := rc.List(ctx, &resource.ListRequest{Type: "machineconfig"})
	if err != nil {
		t.Fatal(err)
	}

	first, err := ls.Recv()
	if err != nil {
		t.Fatal(err)
	}

	ws, err := rc.Watch(ctx, &resource.WatchRequest{Type: "mc"})
	if err != nil {
		t.Fatal(err)
	}

	ev, err := ws.Recv()
	if err != nil {
		t.Fatal(err)
	}

	return map[string]*resource.Resource{"get": got.GetResource(), "list": first.GetResource(), "watch": ev.GetResource()}
}

// TestMachineConfigRedactedForReaders: readers and operators see the
// machine config with its structure and every secret masked; admins see
// it whole, as applied.
func TestMachineConfigRedactedForReaders(t *testing.T) {
	aescbc := make([]byte, 32)
	if _, err := rand.Read(aescbc); err != nil {
		t.Fatal(err)
	}

	data := nodeConfig(t, false, hostname("node-r"),
		"cluster: {aescbcEncryptionSecret: "+base64.StdEncoding.EncodeToString(aescbc)+"}")

	cfg, err := configs.Decode(data)
	if err != nil {
		t.Fatal(err)
	}

	m, c := cfg.Machine, cfg.Cluster

	// Every secret a control-plane config holds, by path.
	secrets := map[string][]byte{
		"machine.token":                     []byte(m.Token),
		"machine.ca.key":                    m.CA.Key,
		"cluster.secret":                    []byte(c.Secret),
		"cluster.token":                     []byte(c.Token),
		"cluster.aescbcEncryptionSecret":    []byte(c.AESCBCEncryptionSecret),
		"cluster.secretboxEncryptionSecret": []byte(c.SecretboxEncryptionSecret),
		"cluster.ca.key":                    c.CA.Key,
		"cluster.aggregatorCA.key":          c.AggregatorCA.Key,
		"cluster.serviceAccount.key":        c.ServiceAccount.Key,
		"cluster.etcd.ca.key":               c.Etcd.CA.Key,
	}

	e := newEnv(t, data, "127.0.0.1:0")
	e.waitServing(t, false)

	tests := []struct {
		role     role.Role
		redacted bool
	}{
		{role.Reader, true},
		{role.Operator, true},
		{role.Admin, false},
	}

	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			rc := resourceClient(dial(t, e.addr, clientCert(t, string(tt.role))))

			for how, r := range machineConfigSpecs(t, rc) {
				spec := r.GetSpecYaml()

				if r.GetRedacted() != tt.redacted || r.GetMetadata().GetVersion() == 0 {
					t.Fatalf("%s: redacted=%t version=%d, want redacted=%t", how, r.GetRedacted(), r.GetMetadata().GetVersion(), tt.redacted)
				}

				if !tt.redacted {
					if !bytes.Equal(spec, data) {
						t.Errorf("%s: an admin gets\n%s\nwant the config as applied", how, spec)
					}

					continue
				}

				var doc map[string]any
				if err := yaml.Unmarshal(spec, &doc); err != nil {
					t.Fatalf("%s: spec is not YAML (%v):\n%s", how, err, spec)
				}

				// The structure is there: settings and certificates, and
				// the documents (the hostname is a HostnameConfig's).
				if !bytes.Contains(spec, []byte("\nkind: HostnameConfig\n")) || !bytes.Contains(spec, []byte("\nhostname: node-r\n")) {
					t.Errorf("%s: the HostnameConfig document is missing:\n%s", how, spec)
				}

				for path, want := range map[string]any{
					"machine.type":        configs.MachineTypeControlPlane,
					"machine.ca.crt":      base64.StdEncoding.EncodeToString(m.CA.Crt),
					"cluster.etcd.ca.crt": base64.StdEncoding.EncodeToString(c.Etcd.CA.Crt),
				} {
					if got := valueAt(doc, path); got != want {
						t.Errorf("%s: %s = %v, want %v", how, path, got, want)
					}
				}

				for path, secret := range secrets {
					if len(secret) == 0 {
						t.Fatalf("the test config lacks %s", path)
					}

					if got := valueAt(doc, path); got != configs.Redacted {
						t.Errorf("%s: %s = %.12v..., want %q", how, path, got, configs.Redacted)
					}

					for _, leak := range secretForms(secret) {
						if bytes.Contains(spec, leak) {
							t.Errorf("%s: the spec holds bytes of %s (%.16q...)", how, path, leak)
						}
					}
				}
			}
		})
	}
}

// secretForms are the ways a secret could show: as it is, base64 (as the
// config writes keys), and each long line of a PEM key, in case only part
// of it leaked.
func secretForms(secret []byte) [][]byte {
	out := [][]byte{secret, []byte(base64.StdEncoding.EncodeToString(secret))}

	for _, line := range bytes.Split(secret, []byte("\n")) {
		if len(line) >= 16 && !bytes.HasPrefix(line, []byte("-----")) {
			out = append(out, line)
		}
	}

	return out
}

// valueAt follows a dotted path of mapping keys through decoded YAML.
func valueAt(doc map[string]any, path string) any {
	var v any = doc

	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}

		v = m[k]
	}

	return v
}
