package render

import "github.com/talosbox/talosbox/configs"

// Validate is Check as a configs.Check, with the node's inputs when they
// are known (opts): passed to configs.Load or Validate (configs.WithChecks),
// the renderers run once configs' own rules pass, and their problems are
// located by line as configs' are.
func Validate(opts ...Option) configs.Check {
	return func(cfg *configs.Config, mode configs.Mode) error { return Check(cfg, mode, opts...) }
}

// Load is the one validation: it decodes data, applies configs' rules for
// mode, then runs every renderer the node would, and locates every problem
// by line. Every path that takes a config reads it here: talosctl validate
// and gen config, apply-config (every mode), maintenance mode, and the
// node's own boot, so a config one of them accepts is one the others
// accept, and one the node can act on.
func Load(data []byte, mode configs.Mode, opts ...configs.ValidateOption) (*configs.Config, []string, error) {
	return configs.Load(data, mode, append(opts, configs.WithChecks(Validate()))...)
}

// LoadOn is Load on a node, with what the node knows (opts, e.g.
// WithKubeBinaries): the renderers' warnings (a component config the
// node could not have its component validate) follow configs'.
func LoadOn(data []byte, mode configs.Mode, opts ...Option) (*configs.Config, []string, error) {
	var warns []string

	opts = append(opts[:len(opts):len(opts)], withWarnings(func(w string) { warns = append(warns, w) }))

	cfg, warnings, err := configs.Load(data, mode, configs.WithChecks(Validate(opts...)))

	return cfg, append(warnings, warns...), err
}
