package configs

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Mode is the kind of platform a node runs on; some rules depend on it.
type Mode string

// Modes, as Talos names them.
const (
	// ModeMetal is a real or virtual machine that installs to a disk.
	ModeMetal Mode = "metal"
	// ModeContainer is a node running in a container: no disks, no kernel.
	ModeContainer Mode = "container"
	// ModeCloud is a cloud VM booted from a prepared image.
	ModeCloud Mode = "cloud"
)

// ParseMode reads a mode name as given on a command line.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(s)); m {
	case ModeMetal, ModeContainer, ModeCloud:
		return m, nil
	default:
		return "", fmt.Errorf("unknown mode %q (expected metal, container or cloud)", s)
	}
}

// RequiresInstall reports whether nodes in this mode install themselves to a
// disk, so the config must say which one.
func (m Mode) RequiresInstall() bool {
	return m == ModeMetal
}

func (m Mode) String() string {
	return string(m)
}

// ValidateOption changes how Validate judges a config.
type ValidateOption func(*validateOptions)

type validateOptions struct {
	strict    bool
	positions *Positions
	checks    []Check
}

// Check is a further check of a config that passed Validate's own rules:
// the node's renderers (internal/render.Check), which configs cannot
// import. Its problems are *ValidationError (or *Errors of them) at config
// paths, so they are located by line as Validate's are.
type Check func(*Config, Mode) error

// WithChecks adds checks that run once the config passed every rule of
// Validate's own.
func WithChecks(checks ...Check) ValidateOption {
	return func(o *validateOptions) { o.checks = append(o.checks, checks...) }
}

// WithStrict turns every warning into an error, like talosctl validate
// --strict.
func WithStrict(strict bool) ValidateOption {
	return func(o *validateOptions) { o.strict = strict }
}

// Validate checks the whole config in one pass and returns every problem:
// warnings (suspicious but usable, as "path: message") apart from errors.
// The error, when not nil, is *Errors with one *ValidationError per problem.
func (c *Config) Validate(mode Mode, opts ...ValidateOption) ([]string, error) {
	var o validateOptions
	for _, opt := range opts {
		opt(&o)
	}

	if c == nil {
		return nil, &Errors{List: []error{&ValidationError{Msg: "config is empty"}}}
	}

	v := &validator{mode: mode, cfg: c}

	switch mode {
	case ModeMetal, ModeContainer, ModeCloud:
	default:
		v.errorf("", "unknown validation mode %q (expected metal, container or cloud)", string(mode))
	}

	v.config()
	v.documents()

	if len(v.errs) == 0 {
		for _, check := range o.checks {
			v.addCheck(check(c, mode))
		}
	}

	var warnings []string

	// A problem in a setting a document made is reported where the
	// document made it, once: the document's own rules and the v1alpha1
	// rules of the fields it folds into may both find it.
	seen := map[string]bool{}
	errs := v.errs[:0]

	for _, e := range v.errs {
		var ve *ValidationError
		if errors.As(e, &ve) {
			ve.Path = c.writtenPath(ve.Path)
		}

		if seen[e.Error()] {
			continue
		}

		seen[e.Error()] = true

		o.positions.Locate(e)
		errs = append(errs, e)
	}

	v.errs = errs

	for _, w := range v.warns {
		w.Path = c.writtenPath(w.Path)
	}

	// With lines known, problems are listed in the order they are
	// written, as an editor shows them.
	if o.positions != nil {
		slices.SortStableFunc(v.errs, func(a, b error) int { return errLine(a) - errLine(b) })
	}

	for _, w := range v.warns {
		w.Line = o.positions.Line(w.Path)

		if o.strict {
			w.Warning = true
			v.errs = append(v.errs, w)

			continue
		}

		warnings = append(warnings, w.Error())
	}

	if len(v.errs) == 0 {
		return warnings, nil
	}

	return warnings, &Errors{List: v.errs}
}

// validator collects problems; every check records and carries on so one
// call reports everything.
type validator struct {
	mode  Mode
	cfg   *Config
	errs  []error
	warns []*ValidationError
	// kubeVersions are the Kubernetes versions the components will run,
	// by component, for the checks that depend on them.
	kubeVersions map[string]KubeVersion
}

// addCheck records what a Check found.
func (v *validator) addCheck(err error) {
	if err == nil {
		return
	}

	if list, ok := err.(*Errors); ok { //nolint:errorlint // a Check returns *Errors itself, never wrapped
		for _, e := range list.List {
			v.addCheck(e)
		}

		return
	}

	var ve *ValidationError
	if errors.As(err, &ve) {
		v.errs = append(v.errs, ve)

		return
	}

	v.errs = append(v.errs, &ValidationError{Msg: err.Error()})
}

func (v *validator) errorf(path, format string, args ...any) {
	v.errs = append(v.errs, &ValidationError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) warnf(path, format string, args ...any) {
	v.warns = append(v.warns, &ValidationError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// check records err, if any, at path.
func (v *validator) check(path string, err error) {
	if err != nil {
		v.errorf(path, "%v", err)
	}
}

func (v *validator) controlPlane() bool {
	return v.cfg.IsControlPlane()
}

func (v *validator) config() {
	c := v.cfg

	if c.withoutV1Alpha1 {
		// The documents may have made a machine section (a hostname),
		// but never the one a node needs.
		v.errorf("", "the config has no v1alpha1 document (version: v1alpha1): a node needs the machine section it holds (type, token, ca)")

		return
	}

	switch c.Version {
	case Version:
	case "":
		v.errorf("version", "config version is required (%q)", Version)
	default:
		v.errorf("version", "invalid config version %q (expected %q)", c.Version, Version)
	}

	// Talos refuses it too: a metal node that keeps its config in memory
	// only boots into maintenance mode at its next reboot.
	if !c.Persist {
		v.errorf("persist", ".persist should be enabled: a node that does not persist its config loses it at the next reboot")
	}

	switch {
	case c.Machine == nil:
		v.errorf("machine", "machine instructions are required")
	default:
		v.machine(c.Machine)
	}

	switch {
	case c.Cluster == nil:
		v.errorf("cluster", "cluster instructions are required")
	default:
		v.cluster(c.Cluster)
	}

	v.kubernetes(c)
	v.componentConfigs(c)
	v.ports(c)
}

// documents validates each typed document alone, then reports what
// folding them found (a setting made both in a document and in the
// v1alpha1 document).
func (v *validator) documents() {
	for _, doc := range v.cfg.Documents {
		doc.check(v, DocumentPath(doc))
	}

	for _, p := range v.cfg.foldProblems {
		cp := *p
		v.errs = append(v.errs, &cp)
	}
}

// sortedKeys gives map keys in a stable order so problems are reported the
// same way every run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}

	slices.Sort(keys)

	return keys
}

func keyPath(path, key string) string {
	return fmt.Sprintf("%s[%q]", path, key)
}

func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// Load decodes data and validates it for mode: the way every path that
// takes a config (talosctl validate, apply-config, the node's boot,
// maintenance mode) reads one. Every problem is located by its line. The
// config is returned when it decoded, even if it is invalid, so callers
// can say what it would have changed.
func Load(data []byte, mode Mode, opts ...ValidateOption) (*Config, []string, error) {
	cfg, pos, err := DecodeWithPositions(data)
	if err != nil {
		return nil, nil, err
	}

	warnings, err := cfg.Validate(mode, append(opts, WithPositions(pos))...)

	return cfg, warnings, err
}

func errLine(err error) int {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Line
	}

	return 0
}
