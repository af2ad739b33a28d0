package configs_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

// roundTrip checks Decode(Encode(cfg)) == cfg and returns the encoding.
func roundTrip(t *testing.T, cfg *configs.Config) []byte {
	t.Helper()

	out, err := cfg.Encode()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}

	again, err := configs.Decode(out)
	if err != nil {
		t.Fatalf("decode of encoded config: %v\n%s", err, out)
	}

	if !reflect.DeepEqual(cfg, again) {
		t.Fatalf("round trip changed the config:\nencoded:\n%s\nfirst:  %#v\nsecond: %#v", out, cfg, again)
	}

	return out
}

// TestSeedFixtures decodes every config snippet of the Talos guides (seed
// 001) strictly, checks a value that shows it landed in the right field, and
// round-trips it.
func TestSeedFixtures(t *testing.T) {
	t.Parallel()

	checks := map[string]func(t *testing.T, c *configs.Config){
		"static-addressing.yaml": func(t *testing.T, c *configs.Config) {
			n := c.Machine.Network
			want := configs.Device{
				Interface: "eth0", CIDR: "10.0.0.201/8", MTU: 8765,
				Routes: []configs.Route{{Network: "0.0.0.0/0", Gateway: "10.0.0.1"}},
			}
			check(t, n.Hostname == "talos" && reflect.DeepEqual(n.Interfaces[0], want) && n.Interfaces[1].Ignore &&
				c.Machine.Time.Servers[0] == "time.cloudflare.com", n)
		},
		"additional-addresses.yaml": func(t *testing.T, c *configs.Config) {
			ifs := c.Machine.Network.Interfaces
			check(t, len(ifs) == 2 && ifs[0].Interface == "lo0" && ifs[1].CIDR == "10.2.2.2/24", ifs)
		},
		"bonding.yaml": func(t *testing.T, c *configs.Config) {
			b := c.Machine.Network.Interfaces[0].Bond
			check(t, b.Mode == "802.3ad" && b.LACPRate == "fast" && b.HashPolicy == "layer3+4" && b.MIIMon == 100 &&
				b.UpDelay == 200 && b.DownDelay == 200 && reflect.DeepEqual(b.Interfaces, []string{"eth0", "eth1"}), b)
		},
		"vlans.yaml": func(t *testing.T, c *configs.Config) {
			v := c.Machine.Network.Interfaces[0].VLANs[0]
			check(t, v.ID == 100 && v.CIDR == "192.168.2.10/28" && v.Routes[0].Gateway == "192.168.2.1", v)
		},
		"airgapped-registry-mirror.yaml": func(t *testing.T, c *configs.Config) {
			m := c.Machine.Registries.Mirrors
			check(t, len(m) == 1 && m["*"].Endpoints[0] == "http://10.5.0.1:6000/", m)
		},
		"pull-through-cache-mirrors.yaml": func(t *testing.T, c *configs.Config) {
			m := c.Machine.Registries.Mirrors
			check(t, len(m) == 5 && m["quay.io"].Endpoints[0] == "http://172.17.0.1:5002", m)
		},
		"ca-certificate-file.yaml": func(t *testing.T, c *configs.Config) {
			f := c.Machine.Files[0]
			check(t, f.Permissions == 0o644 && f.Op == "append" && f.Path == "/etc/ssl/certs/ca-certificates" &&
				strings.HasPrefix(f.Content, "-----BEGIN CERTIFICATE-----\n"), f)
		},
		"containerd-metrics-file.yaml": func(t *testing.T, c *configs.Config) {
			f := c.Machine.Files[0]
			check(t, f.Op == "create" && f.Content == "[metrics]\n  address = \"0.0.0.0:11234\"\n", f)
		},
		"proxy-env.yaml": func(t *testing.T, c *configs.Config) {
			check(t, len(c.Machine.Env) == 3 && c.Machine.Env["https_proxy"] == "http://proxy.corp.example:3128", c.Machine.Env)
		},
		"proxy-time-nameservers.yaml": func(t *testing.T, c *configs.Config) {
			check(t, len(c.Machine.Time.Servers) == 3 && len(c.Machine.Network.Nameservers) == 3, c.Machine)
		},
		"cluster-endpoint.yaml": func(t *testing.T, c *configs.Config) {
			check(t, c.Machine == nil && c.Cluster.ControlPlane.Endpoint == "https://endpoint.example.local:6443", c.Cluster)
		},
		"wireguard.yaml": func(t *testing.T, c *configs.Config) {
			d := c.Machine.Network.Interfaces[0]
			check(t, d.Interface == "wg0" && d.MTU == 1500 && d.WireGuard.ListenPort == 51820 &&
				d.WireGuard.Peers[0].Endpoint == "209.202.254.14:8172" && d.WireGuard.Peers[0].AllowedIPs[0] == "192.168.88.0/24", d)
		},
		"disk-encryption-nodeid.yaml": func(t *testing.T, c *configs.Config) {
			e := c.Machine.SystemDiskEncryption
			check(t, e.State.Keys[0].NodeID != nil && e.Ephemeral.Keys[0].NodeID != nil && e.State.Keys[0].Static == nil, e)
		},
		"disk-encryption-key-kinds.yaml": func(t *testing.T, c *configs.Config) {
			e := c.Machine.SystemDiskEncryption
			check(t, e.State.Keys[0].Slot == 1 && e.Ephemeral.Keys[0].Static.Passphrase == "supersecret", e)
		},
		"disk-encryption-rotation-add.yaml": func(t *testing.T, c *configs.Config) {
			k := c.Machine.SystemDiskEncryption.Ephemeral.Keys
			check(t, len(k) == 2 && k[1].Slot == 1 && k[1].Static.Passphrase == "newkey", k)
		},
		"disk-encryption-rotation-remove.yaml": func(t *testing.T, c *configs.Config) {
			k := c.Machine.SystemDiskEncryption.Ephemeral.Keys
			check(t, len(k) == 1 && k[0].Slot == 1, k)
		},
		"vip.yaml": func(t *testing.T, c *configs.Config) {
			d := c.Machine.Network.Interfaces[0]
			check(t, d.DHCP && d.VIP.IP == "192.168.0.15", d)
		},
		"kubelet-image.yaml": func(t *testing.T, c *configs.Config) {
			check(t, c.Machine.Kubelet.Image == "ghcr.io/talos-systems/kubelet:v1.20.5", c.Machine.Kubelet)
		},
		"apiserver-image.yaml": func(t *testing.T, c *configs.Config) {
			check(t, c.Cluster.APIServer.Image == "k8s.gcr.io/kube-apiserver:v1.20.5", c.Cluster.APIServer)
		},
	}

	files, err := filepath.Glob("testdata/seeds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}

	if len(files) != len(checks) {
		t.Fatalf("%d fixture files but %d checks: every fixture needs a check", len(files), len(checks))
	}

	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()

			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}

			cfg, err := configs.Decode(data)
			if err != nil {
				t.Fatalf("strict decode: %v", err)
			}

			checkFn, ok := checks[filepath.Base(file)]
			if !ok {
				t.Fatalf("no check for %s", file)
			}

			checkFn(t, cfg)
			roundTrip(t, cfg)
		})
	}
}

func check(t *testing.T, ok bool, got any) {
	t.Helper()

	if !ok {
		t.Fatalf("unexpected value: %+v", got)
	}
}

func TestDecodeValues(t *testing.T) {
	t.Parallel()

	cfg, err := configs.Decode([]byte(`
version: v1alpha1
persist: yes
machine:
  time:
    bootTimeout: 2m30s
  files:
    - path: /a
      permissions: 0o600
  network:
    interfaces:
      - interface: eth0
        mtu: 1_500
        bond:
          useCarrier: false
  kubelet:
    extraConfig:
      serverTLSBootstrap: true
      maxPods: 250
      ratio: 1000.0
      nested: {a: [1, "two", null]}
  ca:
    crt: aGVsbG8=
cluster:
  network:
    podSubnets: []
  extraManifestHeaders:
    X-Token: "123"
`))
	if err != nil {
		t.Fatal(err)
	}

	m := cfg.Machine
	check(t, cfg.Persist && m.Time.BootTimeout == 150*time.Second && m.Files[0].Permissions == 0o600, m)
	check(t, m.Network.Interfaces[0].MTU == 1500 && m.Network.Interfaces[0].Bond.UseCarrier != nil &&
		!*m.Network.Interfaces[0].Bond.UseCarrier, m.Network)
	check(t, string(m.CA.Crt) == "hello", m.CA)
	check(t, reflect.DeepEqual(m.Kubelet.ExtraConfig, configs.Unstructured{
		"serverTLSBootstrap": true, "maxPods": 250, "ratio": 1000.0,
		"nested": map[string]any{"a": []any{1, "two", nil}},
	}), m.Kubelet.ExtraConfig)
	check(t, cfg.Cluster.Network.PodSubnets == nil, cfg.Cluster.Network)
	check(t, cfg.Cluster.ExtraManifestHeaders["X-Token"] == "123", cfg.Cluster)

	out := roundTrip(t, cfg)

	// Certificates are plain base64 strings and permissions octal, as Talos
	// writes them; float-ness survives the trip.
	for _, want := range []string{"crt: aGVsbG8=", "permissions: 0o600", "ratio: !!float 1000", "bootTimeout: 2m30s"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("encoded config lacks %q:\n%s", want, out)
		}
	}
}

// TestDecodeTaggedKeys: a free-form section whose keys carry tags other
// than !!str still decodes to string-keyed maps, so the config survives a
// round trip (the encoder drops the tags). Found by FuzzDecodeValidate.
func TestDecodeTaggedKeys(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, nested string
		want         any
	}{
		{"binary key", "!!binary MA==: null\n        0A: 1", map[string]any{"0": nil, "0A": 1}},
		{"local tag", "!foo x: [{!bar y: 2}]", map[string]any{"x": []any{map[string]any{"y": 2}}}},
		{"int keys stay", "0: a\n        b: c", map[any]any{0: "a", "b": "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cfg, err := configs.Decode([]byte("machine:\n  kubelet:\n    extraConfig:\n      a:\n        " + tc.nested + "\n"))
			if err != nil {
				t.Fatal(err)
			}

			check(t, reflect.DeepEqual(cfg.Machine.Kubelet.ExtraConfig["a"], tc.want), cfg.Machine.Kubelet.ExtraConfig)
			roundTrip(t, cfg)
		})
	}
}

func TestDecodeErrorsAreTyped(t *testing.T) {
	t.Parallel()

	_, err := configs.Decode([]byte("machine:\n  foo: 1\n  bar: 2\n"))

	var list *configs.Errors
	if !errors.As(err, &list) || len(list.List) != 2 {
		t.Fatalf("want *Errors with 2 entries, got %#v", err)
	}

	var de *configs.DecodeError
	if !errors.As(err, &de) || de.Line != 2 || de.Path != "machine" {
		t.Fatalf("want first DecodeError at line 2 in machine, got %#v", de)
	}
}

// TestDecodeAliasExpansionIsBounded feeds a small document whose aliases
// expand to hundreds of thousands of nodes; it must be refused, not decoded.
func TestDecodeAliasExpansionIsBounded(t *testing.T) {
	t.Parallel()

	var sb strings.Builder

	sb.WriteString("machine:\n  network:\n    interfaces:\n      - interface: a\n        routes: &r [")

	for i := range 50 {
		if i > 0 {
			sb.WriteString(", ")
		}

		sb.WriteString("{network: 10.0.0.0/8}")
	}

	sb.WriteString("]\n        vlans: &v [")

	for i := range 50 {
		if i > 0 {
			sb.WriteString(", ")
		}

		sb.WriteString("{routes: *r}")
	}

	sb.WriteString("]\n")

	for range 60 {
		sb.WriteString("      - vlans: *v\n")
	}

	if sb.Len() > 8<<10 {
		t.Fatalf("the input should stay small, it is %d bytes", sb.Len())
	}

	_, err := configs.Decode([]byte(sb.String()))
	if err == nil || !strings.HasSuffix(err.Error(), ": config is too large or expands too many aliases") {
		t.Fatalf("got %v", err)
	}
}

// TestManifestsPrune checks talosbox's cluster.manifestsPrune: off unless
// set, kept by the round trip, and a misspelling is still an unknown field.
func TestManifestsPrune(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, doc string
		want      bool
	}{
		{"absent", "cluster:\n  clusterName: c\n", false},
		{"on", "cluster:\n  manifestsPrune: true\n", true},
		{"off", "cluster:\n  manifestsPrune: false\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cfg, err := configs.Decode([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}

			check(t, cfg.Cluster.ManifestsPrune == tc.want, cfg.Cluster)

			out := roundTrip(t, cfg)
			if got := strings.Contains(string(out), "manifestsPrune: true"); got != tc.want {
				t.Errorf("encoded manifestsPrune %v, want %v:\n%s", got, tc.want, out)
			}
		})
	}

	t.Run("misspelt", func(t *testing.T) {
		t.Parallel()

		_, err := configs.Decode([]byte("cluster:\n  clusterName: c\n  manifestPrune: true\n"))

		var de *configs.DecodeError
		if !errors.As(err, &de) || de.Line != 3 || !strings.Contains(de.Msg, "manifestPrune") {
			t.Fatalf("want an unknown-field error at line 3, got %v", err)
		}
	})
}
