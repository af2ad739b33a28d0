// Package talosconfig reads, edits and writes the talosctl client
// configuration file (talosconfig): named contexts holding the endpoints to
// dial, the default target nodes and the client credentials.
package talosconfig

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/pki"
)

// EnvVar names the environment variable that overrides the default path.
const EnvVar = "TALOSCONFIG"

// Config is a talosconfig file. The field names and layout are Talos's, so
// files are interchangeable with real talosctl.
type Config struct {
	Context  string              `yaml:"context"`
	Contexts map[string]*Context `yaml:"contexts"`
}

// Context is one named set of endpoints, nodes and credentials. CA, Crt and
// Key hold base64-encoded PEM.
type Context struct {
	// Target is the pre-"endpoints" spelling; it is folded into Endpoints
	// on load, as talosctl does.
	Target    string   `yaml:"target,omitempty"`
	Endpoints []string `yaml:"endpoints"`
	Nodes     []string `yaml:"nodes,omitempty"`
	CA        string   `yaml:"ca,omitempty"`
	Crt       string   `yaml:"crt,omitempty"`
	Key       string   `yaml:"key,omitempty"`
	Auth      *Auth    `yaml:"auth,omitempty"`
	Cluster   string   `yaml:"cluster,omitempty"`
}

// Auth holds the alternative authentication methods a Talos context may
// carry; talosbox keeps them so such files round-trip.
type Auth struct {
	Basic *struct {
		Username string `yaml:"username"`
		Password string `yaml:"password"`
	} `yaml:"basic,omitempty"`
	SideroV1 *struct {
		Identity string `yaml:"identity"`
	} `yaml:"siderov1,omitempty"`
}

// New returns a config with a single context, which is current.
func New(name string, endpoints []string, caCrt []byte, client *pki.CertAndKey) *Config {
	ctx := &Context{Endpoints: endpoints, CA: base64.StdEncoding.EncodeToString(caCrt)}
	if client != nil {
		ctx.Crt = base64.StdEncoding.EncodeToString(client.Crt)
		ctx.Key = base64.StdEncoding.EncodeToString(client.Key)
	}

	return &Config{Context: name, Contexts: map[string]*Context{name: ctx}}
}

// ResolvePath picks the talosconfig path: the --talosconfig flag value, then
// $TALOSCONFIG, then ~/.talos/config. lookupEnv is os.LookupEnv outside tests.
func ResolvePath(flagValue string, lookupEnv func(string) (string, bool)) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}

	if p, ok := lookupEnv(EnvVar); ok && p != "" {
		return p, nil
	}

	home, ok := lookupEnv("HOME")
	if !ok || home == "" {
		return "", fmt.Errorf("cannot find the talosconfig: --talosconfig, $%s and $HOME are all unset", EnvVar)
	}

	return filepath.Join(home, ".talos", "config"), nil
}

// Parse decodes a talosconfig. Unknown fields are errors (with their line)
// rather than being dropped silently on the next save.
func Parse(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)

	var c Config
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse talosconfig: %w", err)
	}

	if c.Contexts == nil {
		c.Contexts = map[string]*Context{}
	}

	for name, ctx := range c.Contexts {
		if ctx == nil {
			ctx = &Context{}
			c.Contexts[name] = ctx
		}

		if ctx.Target != "" {
			ctx.Endpoints = append(ctx.Endpoints, ctx.Target)
			ctx.Target = ""
		}
	}

	return &c, nil
}

// Load reads the talosconfig at path. A missing file is an empty config, so
// `config add` and `config merge` can create one.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{Contexts: map[string]*Context{}}, nil
	}

	if err != nil {
		return nil, fmt.Errorf("read talosconfig: %w", err)
	}

	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	return c, nil
}

// Bytes encodes the config as YAML.
func (c *Config) Bytes() ([]byte, error) {
	var buf bytes.Buffer

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)

	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode talosconfig: %w", err)
	}

	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode talosconfig: %w", err)
	}

	return buf.Bytes(), nil
}

// Save writes the config to path with mode 0600, creating its directory
// with mode 0700. The write is atomic: on failure the old file is intact.
func (c *Config) Save(path string) error {
	data, err := c.Bytes()
	if err != nil {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save talosconfig: %w", err)
	}

	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("save talosconfig: %w", err)
	}

	return nil
}

// Credentials decodes the context's CA certificate and client pair.
func (ctx *Context) Credentials() (ca []byte, client *pki.CertAndKey, err error) {
	client = &pki.CertAndKey{}

	for _, f := range []struct {
		name, in string
		out      *[]byte
	}{{"ca", ctx.CA, &ca}, {"crt", ctx.Crt, &client.Crt}, {"key", ctx.Key, &client.Key}} {
		if f.in == "" {
			return nil, nil, fmt.Errorf("context has no %s", f.name)
		}

		if *f.out, err = base64.StdEncoding.DecodeString(f.in); err != nil {
			return nil, nil, fmt.Errorf("context %s: invalid base64: %w", f.name, err)
		}
	}

	return ca, client, nil
}
