package bus

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/talosbox/talosbox/internal/levenshtein"
)

// PrintColumn is one extra column `talosctl get` shows for a type.
type PrintColumn struct {
	Name     string // header, e.g. "ADDRESS"
	JSONPath string // path into the spec, e.g. "{.address}"
}

// Definition describes a resource type.
type Definition struct {
	// Type is "CamelCasePlural.suffix", e.g. "Addresses.net.talos.dev".
	Type             string
	DefaultNamespace string
	// Aliases are extra names users may type; the lowercase type, its
	// plural word and the initials of that word are added automatically.
	Aliases      []string
	PrintColumns []PrintColumn
	// Sensitive specs hold secrets: they are redacted for readers.
	Sensitive bool
	// NoInitials keeps the initials ("ms") from the automatic aliases: a
	// type of talosbox's own must not take a short name that Talos's
	// types share, or `get ms` would resolve differently than in Talos.
	NoInitials bool
}

var typeNameRe = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*s\.[a-z0-9]+(\.[a-z0-9-]+)+$`)

// plural is the first dotted part of the type: "Addresses".
func (d Definition) plural() string {
	p, _, _ := strings.Cut(d.Type, ".")
	return p
}

// autoAliases are derived from the type name: "MachineConfigs" gives
// "machineconfigs", "machineconfig", "mc" and "mcs".
func (d Definition) autoAliases() []string {
	p := d.plural()
	lower := strings.ToLower(p)
	out := []string{lower, singular(lower)}

	var initials strings.Builder

	for _, r := range p {
		if unicode.IsUpper(r) {
			initials.WriteRune(unicode.ToLower(r))
		}
	}

	if i := initials.String(); len(i) > 1 && !d.NoInitials {
		out = append(out, i, i+"s")
	}

	return out
}

// singular undoes English plurals well enough for type names.
func singular(p string) string {
	switch {
	case strings.HasSuffix(p, "ies"):
		return strings.TrimSuffix(p, "ies") + "y"
	case strings.HasSuffix(p, "sses"), strings.HasSuffix(p, "uses"), strings.HasSuffix(p, "xes"), strings.HasSuffix(p, "shes"):
		return strings.TrimSuffix(p, "es")
	}

	return strings.TrimSuffix(p, "s")
}

// Registry holds resource definitions and resolves what users type
// ("addresses", "address", "Addresses.net.talos.dev") to a type.
type Registry struct {
	mu   sync.RWMutex
	defs map[string]Definition
}

// NewRegistry makes an empty registry.
func NewRegistry() *Registry { return &Registry{defs: map[string]Definition{}} }

// Register adds a definition. The type name must be well formed and new,
// and no explicit alias may already name another type explicitly.
func (r *Registry) Register(d Definition) error {
	if !typeNameRe.MatchString(d.Type) {
		return fmt.Errorf("register %q: type must look like CamelCasePlural.domain.suffix", d.Type)
	}

	if d.DefaultNamespace == "" {
		return fmt.Errorf("register %q: default namespace is required", d.Type)
	}

	r.mu.Lock()
	defer r.mu.Unlock()

	if _, ok := r.defs[d.Type]; ok {
		return fmt.Errorf("register %q: already registered", d.Type)
	}

	for _, a := range d.Aliases {
		for _, o := range r.defs {
			if strings.EqualFold(o.Type, a) || slices.ContainsFunc(o.Aliases, func(x string) bool { return strings.EqualFold(x, a) }) {
				return fmt.Errorf("register %q: alias %q already names %s", d.Type, a, o.Type)
			}
		}
	}

	d.Aliases = slices.Clone(d.Aliases)
	r.defs[d.Type] = d

	return nil
}

// Get returns the definition of an exact type name.
func (r *Registry) Get(typ string) (Definition, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()

	d, ok := r.defs[typ]

	return d, ok
}

// All returns every definition, sorted by type.
func (r *Registry) All() []Definition {
	r.mu.RLock()
	defer r.mu.RUnlock()

	out := make([]Definition, 0, len(r.defs))
	for _, d := range r.defs {
		out = append(out, d)
	}

	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })

	return out
}

// Lookup resolves a name case-insensitively. A full type name or an
// explicit alias wins over automatic aliases; a name that still fits more
// than one type is an error listing the candidates.
func (r *Registry) Lookup(name string) (Definition, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()

	var explicit, auto []Definition

	for _, d := range r.defs {
		switch {
		case strings.EqualFold(d.Type, name), slices.ContainsFunc(d.Aliases, func(a string) bool { return strings.EqualFold(a, name) }):
			explicit = append(explicit, d)
		case slices.Contains(d.autoAliases(), strings.ToLower(name)):
			auto = append(auto, d)
		}
	}

	found := explicit
	if len(found) == 0 {
		found = auto
	}

	switch len(found) {
	case 0:
		msg := fmt.Sprintf("resource type %q not found", name)
		if s := r.suggestLocked(name); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}

		return Definition{}, &LookupError{Err: ErrUnknownType, Msg: msg}
	case 1:
		return found[0], nil
	}

	names := make([]string, len(found))
	for i, d := range found {
		names[i] = d.Type
	}

	sort.Strings(names)

	return Definition{}, &LookupError{Err: ErrAmbiguousType, Msg: fmt.Sprintf("resource type %q is ambiguous: it could be %s", name, strings.Join(names, ", "))}
}

// Lookup failures; test with errors.Is.
var (
	ErrUnknownType   = errors.New("unknown resource type")
	ErrAmbiguousType = errors.New("ambiguous resource type")
)

// LookupError is a failed Lookup with a message fit for users.
type LookupError struct {
	Err error
	Msg string
}

func (e *LookupError) Error() string { return e.Msg }

func (e *LookupError) Unwrap() error { return e.Err }

// suggestLocked finds up to three types one of whose names is close to
// name, closest first. Short names are initials ("bs", "as"): one letter
// off is another word entirely, so they get no fuzzy match, only longer
// names do (a typo per four letters), or names that start with them.
func (r *Registry) suggestLocked(name string) []string {
	want := strings.ToLower(name)
	limit := len(want) / 4

	type candidate struct {
		typ  string
		dist int
	}

	var found []candidate

	for _, d := range r.defs {
		names := append([]string{strings.ToLower(d.Type)}, d.autoAliases()...)
		for _, a := range d.Aliases {
			names = append(names, strings.ToLower(a))
		}

		best := -1

		for _, n := range names {
			dist := levenshtein.Distance(want, n)

			switch {
			case limit > 0 && dist <= limit:
			case len(want) >= 3 && strings.HasPrefix(n, want):
				dist = limit + 1 // after every real near miss
			default:
				continue
			}

			if best < 0 || dist < best {
				best = dist
			}
		}

		if best >= 0 {
			found = append(found, candidate{d.Type, best})
		}
	}

	sort.Slice(found, func(i, j int) bool {
		if found[i].dist != found[j].dist {
			return found[i].dist < found[j].dist
		}

		return found[i].typ < found[j].typ
	})

	out := make([]string, 0, 3)
	for _, c := range found[:min(len(found), 3)] {
		out = append(out, fmt.Sprintf("%q", c.typ))
	}

	return out
}
