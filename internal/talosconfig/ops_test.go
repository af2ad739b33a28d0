package talosconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

func threeContexts() *Config {
	return &Config{Context: "b", Contexts: map[string]*Context{
		"a":     {Endpoints: []string{"10.0.0.1"}},
		"b":     {Endpoints: []string{"10.0.1.1"}, Nodes: []string{"10.0.1.2"}},
		"b-dev": {Endpoints: []string{"10.0.2.1"}},
	}}
}

func TestSetEndpointsAndNodes(t *testing.T) {
	tests := []struct {
		name     string
		cfg      *Config
		override string
		op       func(*Config, string) error
		check    func(*Config) bool
		err      string
	}{
		{"endpoints on current", threeContexts(), "",
			func(c *Config, o string) error { return c.SetEndpoints(o, []string{" 10.9.9.9 ", "cp.example.org"}) },
			func(c *Config) bool {
				return slices.Equal(c.Contexts["b"].Endpoints, []string{"10.9.9.9", "cp.example.org"})
			}, ""},
		{"endpoints on override", threeContexts(), "a",
			func(c *Config, o string) error { return c.SetEndpoints(o, []string{"x"}) },
			func(c *Config) bool {
				return slices.Equal(c.Contexts["a"].Endpoints, []string{"x"}) && c.Contexts["b"].Endpoints[0] == "10.0.1.1"
			}, ""},
		{"no endpoints", threeContexts(), "", func(c *Config, o string) error { return c.SetEndpoints(o, nil) }, nil,
			"at least one endpoint is required"},
		{"blank endpoint", threeContexts(), "", func(c *Config, o string) error { return c.SetEndpoints(o, []string{"a", " "}) }, nil,
			"endpoints: empty value"},
		{"nodes replaced", threeContexts(), "",
			func(c *Config, o string) error { return c.SetNodes(o, []string{"n1", "n2"}) },
			func(c *Config) bool { return slices.Equal(c.Contexts["b"].Nodes, []string{"n1", "n2"}) }, ""},
		{"nodes cleared", threeContexts(), "", func(c *Config, o string) error { return c.SetNodes(o, nil) },
			func(c *Config) bool { return len(c.Contexts["b"].Nodes) == 0 }, ""},
		{"undefined override", threeContexts(), "foo", func(c *Config, o string) error { return c.SetNodes(o, nil) }, nil,
			`context "foo" is not defined`},
		{"no current context", &Config{Contexts: map[string]*Context{}}, "",
			func(c *Config, o string) error { return c.SetEndpoints(o, []string{"x"}) }, nil, "no context is set"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op(tt.cfg, tt.override)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if !tt.check(tt.cfg) {
				t.Errorf("unexpected result: %+v", tt.cfg.Contexts)
			}
		})
	}
}

func TestUse(t *testing.T) {
	c := threeContexts()

	if err := c.Use("a"); err != nil || c.Context != "a" {
		t.Fatalf("Use(a): %v, current %q", err, c.Context)
	}

	if err := c.Use("zzz"); err == nil || err.Error() != `context "zzz" is not defined` || c.Context != "a" {
		t.Fatalf("Use(zzz): %v, current %q", err, c.Context)
	}
}

func TestMerge(t *testing.T) {
	c := threeContexts()
	other := &Config{Context: "b", Contexts: map[string]*Context{
		"a":   {Endpoints: []string{"new-a"}},
		"b":   {Endpoints: []string{"new-b"}},
		"new": {Endpoints: []string{"n"}},
	}}

	renames := c.Merge(other)

	want := []Rename{{"a", "a-1"}, {"b", "b-1"}}
	if !slices.Equal(renames, want) {
		t.Errorf("renames = %v, want %v", renames, want)
	}

	if got := renames[1].String(); got != `"b" -> "b-1"` {
		t.Errorf("String() = %s", got)
	}

	if c.Context != "b-1" {
		t.Errorf("current = %q, want the merged current context b-1", c.Context)
	}

	if !slices.Equal(c.Names(), []string{"a", "a-1", "b", "b-1", "b-dev", "new"}) ||
		c.Contexts["a"].Endpoints[0] != "10.0.0.1" || c.Contexts["a-1"].Endpoints[0] != "new-a" {
		t.Errorf("contexts after merge: %v", c.Names())
	}

	// Merging again takes the next free suffix.
	again := c.Merge(&Config{Contexts: map[string]*Context{"a": {}}})
	if !slices.Equal(again, []Rename{{"a", "a-2"}}) || c.Context != "b-1" {
		t.Errorf("second merge: %v, current %q", again, c.Context)
	}

	empty := &Config{}
	if r := empty.Merge(other); len(r) != 0 || empty.Context != "b" || len(empty.Contexts) != 3 {
		t.Errorf("merge into empty: %v %+v", r, empty)
	}
}

func writePair(t *testing.T, dir, name string, pair *pki.CertAndKey) (crt, key string) {
	t.Helper()

	crt, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")

	if err := os.WriteFile(crt, pair.Crt, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(key, pair.Key, 0o600); err != nil {
		t.Fatal(err)
	}

	return crt, key
}

func TestAdd(t *testing.T) {
	dir := t.TempDir()

	b, err := pki.NewBundle(pki.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}

	admin, err := b.AdminCertificate(nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	caPath := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caPath, b.Certs.OS.Crt, 0o600); err != nil {
		t.Fatal(err)
	}

	crt, key := writePair(t, dir, "admin", admin)
	_, otherKey := writePair(t, dir, "etcd", &b.Certs.Etcd)

	c := &Config{}
	if err := c.Add("lab", AddOptions{CA: caPath, Crt: crt, Key: key}); err != nil {
		t.Fatal(err)
	}

	if c.Context != "lab" {
		t.Errorf("first context not made current: %q", c.Context)
	}

	ca, client, err := c.Contexts["lab"].Credentials()
	if err != nil {
		t.Fatal(err)
	}

	if string(ca) != string(b.Certs.OS.Crt) || string(client.Crt) != string(admin.Crt) || string(client.Key) != string(admin.Key) {
		t.Error("credentials do not round-trip")
	}

	if err := c.Add("bare", AddOptions{}); err != nil || c.Context != "lab" {
		t.Errorf("bare add: %v, current %q", err, c.Context)
	}

	tests := []struct {
		name string
		opts AddOptions
		ctx  string
		want string
	}{
		{"duplicate", AddOptions{}, "lab", `context "lab" already exists`},
		{"crt without key", AddOptions{Crt: crt}, "x", "both are required"},
		{"mismatched key", AddOptions{Crt: crt, Key: otherKey}, "x", "private key does not match certificate"},
		{"missing ca file", AddOptions{CA: filepath.Join(dir, "nope")}, "x", "read CA"},
		{"ca not a certificate", AddOptions{CA: key}, "x", `unexpected PEM block "ED25519 PRIVATE KEY"`},
		{"no name", AddOptions{}, "", "name is required"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Add(tt.ctx, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}

			if tt.ctx == "x" && c.Contexts["x"] != nil {
				t.Error("failed add left a context behind")
			}
		})
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name, pattern string
		confirm       func(string) bool
		removed       []string
		skipped       string
		left          []string
		err           string
	}{
		{"one", "a", nil, []string{"a"}, "", []string{"b", "b-dev"}, ""},
		{"glob skips current", "b*", nil, []string{"b-dev"}, "b", []string{"a", "b"}, ""},
		{"all but current", "*", nil, []string{"a", "b-dev"}, "b", []string{"b"}, ""},
		{"confirm declines", "*", func(n string) bool { return n == "a" }, []string{"a"}, "b", []string{"b", "b-dev"}, ""},
		{"only current", "b", nil, nil, "", nil, `refusing to remove the current context "b"`},
		{"no match", "zz*", nil, nil, "", nil, `no contexts matched "zz*"`},
		{"bad pattern", "[", nil, nil, "", nil, `invalid pattern "["`},
		{"empty pattern", "", nil, nil, "", nil, "no context specified"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := threeContexts()

			res, err := c.Remove(tt.pattern, tt.confirm)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}

				if len(c.Contexts) != 3 {
					t.Error("failed remove changed the config")
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if !slices.Equal(res.Removed, tt.removed) || res.SkippedCurrent != tt.skipped || !slices.Equal(c.Names(), tt.left) {
				t.Errorf("removed %v skipped %q left %v; want %v %q %v", res.Removed, res.SkippedCurrent, c.Names(), tt.removed, tt.skipped, tt.left)
			}
		})
	}

	if _, err := (&Config{}).Remove("*", nil); err == nil || err.Error() != "no contexts defined" {
		t.Errorf("empty config: %v", err)
	}
}
