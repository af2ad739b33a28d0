// Package validation checks what a node hands its CRI containerd with
// containerd's own code, without a node: the merged CRI config decoded
// as containerd 2.4 decodes it (its config types, taken from the plugin
// registrations the node's containerd links, its migrations, its strict
// decoder), what the CRI plugins refuse as they load, and registry hosts
// files parsed by containerd's hosts.toml parser. A config that would make
// containerd refuse to start, or start without a working CRI, is refused
// here, before anything is written: configs.Load runs this through
// internal/render, at talosctl validate, at apply-config and at boot.
package validation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	// The daemon's plugins as the node's containerd applet links them:
	// every section a part may configure is decoded into its plugin's
	// own config type.
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	srvconfig "github.com/containerd/containerd/v2/cmd/containerd/server/config"
	"github.com/containerd/containerd/v2/version"
	"github.com/containerd/log"
	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"
	"github.com/pelletier/go-toml/v2"
	"github.com/sirupsen/logrus"
)

// Part is one CRI config part: the file it is read from (named as the
// user knows it) and its content.
type Part struct {
	Name string
	Data []byte
}

// Error is a CRI setting containerd refuses: the part that set it, the
// TOML key and why.
type Error struct {
	// Part is the file of the part that set Key last ("" when no part
	// sets it: a default of containerd's).
	Part string
	// Key is the full TOML key, from the top of the merged config.
	Key []string
	Err error
}

func (e *Error) Error() string {
	where := FormatKey(e.Key)
	if e.Part != "" {
		where = e.Part + ": " + where
	}

	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// FormatKey writes a key as it would appear in a TOML file.
func FormatKey(key []string) string {
	out := make([]string, len(key))

	for i, k := range key {
		out[i] = k
		if k == "" || strings.ContainsFunc(k, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			out[i] = fmt.Sprintf("%q", k)
		}
	}

	return strings.Join(out, ".")
}

// Plugin IDs of the CRI plugins in containerd 2.x.
const (
	PluginCRIRuntime = "io.containerd.cri.v1.runtime"
	PluginCRIImages  = "io.containerd.cri.v1.images"
	PluginCRIGRPC    = "io.containerd.grpc.v1.cri"
)

// CRIPlugins are the plugins without which the CRI serves nothing.
var CRIPlugins = []string{PluginCRIRuntime, PluginCRIImages, PluginCRIGRPC}

// registrations are containerd's plugins by type.ID, read once.
func registrations() map[string]plugin.Registration {
	regs := map[string]plugin.Registration{}

	for _, r := range registry.Graph(func(*plugin.Registration) bool { return false }) {
		regs[r.URI()] = r
	}

	return regs
}

// CRIConfig checks merged, the cri.toml parts merge into (parts, in
// merge order, say who set what), as the CRI containerd would load it:
// imported by a main config that disables disabled. It returns an *Error
// for the first setting containerd refuses to decode (it would not
// start), or that a CRI plugin refuses as it loads (it would start with
// no CRI), or nil.
func CRIConfig(merged []byte, parts []Part, disabled []string) error {
	ctx := quiet()
	blame := newBlame(parts)

	cfg, err := decodeTop(ctx, merged)
	if err != nil {
		return blame.wrap(err, nil)
	}

	off := append(slices.Clone(disabled), cfg.DisabledPlugins...)
	for _, id := range CRIPlugins {
		if slices.Contains(cfg.DisabledPlugins, id) {
			return blame.error([]string{"disabled_plugins"}, fmt.Errorf("disables %s, without which the node runs no pods", id))
		}
	}

	regs := registrations()

	decoded := map[string]reflect.Value{}

	for _, id := range slices.Sorted(maps.Keys(cfg.Plugins)) {
		reg, ok := regs[id]
		if !ok || reg.Config == nil || slices.Contains(off, id) {
			// containerd ignores a section no loaded plugin reads.
			continue
		}

		v := defaults(reg.Config)
		if _, err := cfg.Decode(ctx, id, v.Interface()); err != nil {
			return blame.wrap(err, []string{"plugins", id})
		}

		decoded[id] = v
	}

	return loadChecks(decoded, blame)
}

// quiet is a context whose containerd logger says nothing: what the
// decoder logs (unknown keys, which containerd ignores) is no error, and
// validation runs in talosctl as well as on the node.
func quiet() context.Context {
	l := logrus.New()
	l.Out = io.Discard

	return log.WithLogger(context.Background(), logrus.NewEntry(l))
}

// decodeTop decodes the merged file as containerd decodes a config file
// and migrates it to containerd's version with every plugin's migration,
// as LoadConfigWithPlugins does with an import older than the config
// that imports it.
func decodeTop(ctx context.Context, data []byte) (*srvconfig.Config, error) {
	cfg := &srvconfig.Config{}

	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(cfg)
	if _, ok := errors.AsType[*toml.StrictMissingError](err); ok {
		// Unknown keys are only logged by containerd.
		cfg = &srvconfig.Config{}
		err = toml.Unmarshal(data, cfg)
	}

	if err != nil {
		return nil, err
	}

	if cfg.Version > version.ConfigVersion {
		return nil, &keyError{key: []string{"version"}, err: cfg.ValidateVersion()}
	}

	regs := registry.Graph(func(*plugin.Registration) bool { return false })

	for v := cfg.Version; v < version.ConfigVersion; v++ {
		if err := cfg.MigrateConfigTo(ctx, v+1); err != nil {
			return nil, &keyError{key: []string{"version"}, err: fmt.Errorf("migrate from version %d: %w", v, err)}
		}

		for _, r := range regs {
			if r.ConfigMigration != nil {
				if err := r.ConfigMigration(ctx, v, cfg.Plugins); err != nil {
					return nil, &keyError{key: []string{"plugins", r.URI()}, err: fmt.Errorf("migrate from version %d: %w", v, err)}
				}
			}
		}
	}

	return cfg, nil
}

// keyError is an error about a known key.
type keyError struct {
	key []string
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// defaults is a fresh copy of a plugin's default config, which the daemon
// decodes the section onto; a copy, so the registration's stays as it is.
func defaults(config any) reflect.Value {
	v := reflect.New(reflect.TypeOf(config).Elem())

	if data, err := toml.Marshal(config); err == nil {
		if err := toml.Unmarshal(data, v.Interface()); err != nil {
			v = reflect.New(reflect.TypeOf(config).Elem())
		}
	}

	return v
}

// blame finds the part that set a key last.
type blame struct {
	parts  []Part
	tables []map[string]any
}

func newBlame(parts []Part) *blame {
	b := &blame{parts: parts}

	for _, p := range parts {
		t := map[string]any{}
		_ = toml.Unmarshal(p.Data, &t) // a part that does not parse sets nothing
		b.tables = append(b.tables, t)
	}

	return b
}

// who is the last part that sets key or, failing that, the longest of
// its prefixes.
func (b *blame) who(key []string) string {
	for n := len(key); n > 0; n-- {
		for i := len(b.tables) - 1; i >= 0; i-- {
			if has(b.tables[i], key[:n]) {
				return b.parts[i].Name
			}
		}
	}

	return ""
}

func has(t map[string]any, key []string) bool {
	var cur any = t

	for _, k := range key {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}

		if cur, ok = m[k]; !ok {
			return false
		}
	}

	return true
}

func (b *blame) error(key []string, err error) *Error {
	return &Error{Part: b.who(key), Key: key, Err: err}
}

// wrap turns a decode error into an *Error whose key starts at prefix
// (the plugin's section).
func (b *blame) wrap(err error, prefix []string) error {
	if ke, ok := errors.AsType[*keyError](err); ok {
		return b.error(ke.key, fmt.Errorf("containerd refuses it: %w", ke.err))
	}

	if de, ok := errors.AsType[*toml.DecodeError](err); ok {
		key := append(slices.Clone(prefix), de.Key()...)
		return b.error(key, fmt.Errorf("containerd refuses it: %s", strings.TrimPrefix(de.Error(), "toml: ")))
	}

	return b.error(prefix, fmt.Errorf("containerd refuses it: %s", strings.TrimPrefix(err.Error(), "toml: ")))
}
