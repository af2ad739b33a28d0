package talosconfig

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/internal/pki"
)

// Current returns the name and data of the context in use: override (the
// --context flag) when set, else the config's current context.
func (c *Config) Current(override string) (string, *Context, error) {
	name := override
	if name == "" {
		name = c.Context
	}

	if name == "" {
		return "", nil, errors.New("no context is set")
	}

	ctx, ok := c.Contexts[name]
	if !ok {
		return "", nil, fmt.Errorf("context %q is not defined", name)
	}

	return name, ctx, nil
}

// SetEndpoints replaces the endpoints of the context in use
// (`talosctl config endpoint`); at least one is required.
func (c *Config) SetEndpoints(override string, endpoints []string) error {
	clean, err := cleanList(endpoints)
	if err != nil {
		return fmt.Errorf("endpoints: %w", err)
	}

	if len(clean) == 0 {
		return errors.New("endpoints: at least one endpoint is required")
	}

	_, ctx, err := c.Current(override)
	if err != nil {
		return err
	}

	ctx.Endpoints = clean

	return nil
}

// SetNodes replaces the default target nodes of the context in use
// (`talosctl config node`); an empty list clears them.
func (c *Config) SetNodes(override string, nodes []string) error {
	clean, err := cleanList(nodes)
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}

	_, ctx, err := c.Current(override)
	if err != nil {
		return err
	}

	ctx.Nodes = clean

	return nil
}

func cleanList(in []string) ([]string, error) {
	out := make([]string, 0, len(in))

	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, errors.New("empty value")
		}

		out = append(out, s)
	}

	return out, nil
}

// Use makes name the current context (`talosctl config context`).
func (c *Config) Use(name string) error {
	if _, ok := c.Contexts[name]; !ok {
		return fmt.Errorf("context %q is not defined", name)
	}

	c.Context = name

	return nil
}

// Names returns the context names, sorted.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.Contexts))
	for name := range c.Contexts {
		names = append(names, name)
	}

	slices.Sort(names)

	return names
}

// Rename records a context renamed by Merge because its name was taken.
type Rename struct{ From, To string }

// String renders the rename as talosctl reports it.
func (r Rename) String() string { return fmt.Sprintf("%q -> %q", r.From, r.To) }

// Merge adds the contexts of other (`talosctl config merge`). A name that is
// taken gets the first free suffix -1, -2, ...; the current context becomes
// other's current one. Contexts are merged in name order so renames are
// reproducible.
func (c *Config) Merge(other *Config) []Rename {
	if c.Contexts == nil {
		c.Contexts = map[string]*Context{}
	}

	var renames []Rename

	mapped := map[string]string{}

	for _, name := range other.Names() {
		merged := name
		for i := 1; c.Contexts[merged] != nil; i++ {
			merged = fmt.Sprintf("%s-%d", name, i)
		}

		if merged != name {
			renames = append(renames, Rename{From: name, To: merged})
		}

		mapped[name] = merged
		c.Contexts[merged] = other.Contexts[name]
	}

	if to, ok := mapped[other.Context]; ok {
		c.Context = to
	}

	return renames
}

// AddOptions name the PEM files of a new context (`talosctl config add
// --ca --crt --key`). All are optional, but crt and key go together.
type AddOptions struct {
	CA, Crt, Key string
}

// Add creates a context from PEM files. Unlike talosctl it refuses to
// replace an existing context, and it checks that the key matches the
// certificate. A config without a current context gets the new one as
// current, so the next `config endpoint` works.
func (c *Config) Add(name string, opts AddOptions) error {
	if name == "" {
		return errors.New("add context: name is required")
	}

	if _, ok := c.Contexts[name]; ok {
		return fmt.Errorf("add context: context %q already exists", name)
	}

	if (opts.Crt == "") != (opts.Key == "") {
		return errors.New("add context: if either crt or key is given, both are required")
	}

	ctx := &Context{}

	if opts.CA != "" {
		ca, err := os.ReadFile(opts.CA)
		if err != nil {
			return fmt.Errorf("add context: read CA: %w", err)
		}

		if _, err := pki.ParseCertificatePEM(ca); err != nil {
			return fmt.Errorf("add context: %s: %w", opts.CA, err)
		}

		ctx.CA = base64.StdEncoding.EncodeToString(ca)
	}

	if opts.Crt != "" {
		crt, err := os.ReadFile(opts.Crt)
		if err != nil {
			return fmt.Errorf("add context: read certificate: %w", err)
		}

		key, err := os.ReadFile(opts.Key)
		if err != nil {
			return fmt.Errorf("add context: read key: %w", err)
		}

		if err := (&pki.CertAndKey{Crt: crt, Key: key}).Validate(); err != nil {
			return fmt.Errorf("add context: %s, %s: %w", opts.Crt, opts.Key, err)
		}

		ctx.Crt = base64.StdEncoding.EncodeToString(crt)
		ctx.Key = base64.StdEncoding.EncodeToString(key)
	}

	if c.Contexts == nil {
		c.Contexts = map[string]*Context{}
	}

	c.Contexts[name] = ctx

	if c.Context == "" {
		c.Context = name
	}

	return nil
}

// RemoveResult says what Remove did.
type RemoveResult struct {
	Removed []string
	// SkippedCurrent is the current context when the pattern matched it;
	// talosctl never removes the context in use.
	SkippedCurrent string
}

// Remove deletes the contexts whose names match the glob pattern
// (`talosctl config remove`). confirm, when not nil, is asked for each
// context. The current context is never removed: if it is the only match
// that is an error, otherwise it is reported in SkippedCurrent.
func (c *Config) Remove(pattern string, confirm func(name string) bool) (RemoveResult, error) {
	var res RemoveResult

	if pattern == "" {
		return res, errors.New("no context specified")
	}

	if _, err := path.Match(pattern, ""); err != nil {
		return res, fmt.Errorf("invalid pattern %q: %w", pattern, err)
	}

	if len(c.Contexts) == 0 {
		return res, errors.New("no contexts defined")
	}

	var matches []string

	for _, name := range c.Names() {
		if ok, _ := path.Match(pattern, name); ok {
			matches = append(matches, name)
		}
	}

	switch {
	case len(matches) == 0:
		return res, fmt.Errorf("no contexts matched %q", pattern)
	case len(matches) == 1 && matches[0] == c.Context:
		return res, fmt.Errorf("refusing to remove the current context %q: switch to another context first", c.Context)
	}

	for _, name := range matches {
		if name == c.Context {
			res.SkippedCurrent = name

			continue
		}

		if confirm != nil && !confirm(name) {
			continue
		}

		delete(c.Contexts, name)
		res.Removed = append(res.Removed, name)
	}

	return res, nil
}
