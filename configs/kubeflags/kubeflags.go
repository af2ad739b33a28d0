// Package kubeflags knows which command-line flags each Kubernetes
// component accepts, per Kubernetes version, so that a machine config's
// extraArgs can be refused when the component that will run would refuse
// them (and crash-loop) instead.
//
// The lists are never written by hand: `make images` builds every pinned
// Kubernetes version, runs each component's --help and writes
// data/v<VERSION>.json (internal/imagebuild, ParseHelp and Encode), and the
// files are embedded here. `make test` fails when they differ from what the
// binaries say.
//
// It imports only the standard library (and talosbox's stdlib-only
// levenshtein), because talosctl validates configs and must not link
// Kubernetes or node-side code.
//
// Use:
//
//	set, match := kubeflags.For("kube-apiserver", "1.34.12")
//	if match == kubeflags.None { /* no list: accept */ }
//	f, ok := set.Lookup("audit-log-maxage")
//	if !ok { hint := set.Suggest("audit-log-maxage") }
//	err := f.CheckValue("30")
package kubeflags

import (
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/talosbox/talosbox/internal/levenshtein"
)

// The components lists exist for, as their binaries are named.
const (
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Proxy             = "kube-proxy"
	Kubelet           = "kubelet"
)

// Components are the components every data file covers.
var Components = []string{APIServer, ControllerManager, Scheduler, Proxy, Kubelet}

// Match says how well the list For found fits the version asked for.
type Match int

const (
	// None: no list for that minor (or the version or component is not
	// one we know); the caller cannot check the flags.
	None Match = iota
	// SameMinor: no list for that patch release, so the newest list of
	// the same minor stands in; flags do not change within a minor in
	// practice.
	SameMinor
	// Exact: the list of that very release.
	Exact
)

func (m Match) String() string {
	switch m {
	case Exact:
		return "exact"
	case SameMinor:
		return "same minor"
	default:
		return "none"
	}
}

// Flag is one flag a component accepts.
type Flag struct {
	// Name is the long name, without dashes ("audit-log-maxage").
	Name string
	// Type is pflag's name for the value as --help prints it: "int",
	// "duration", "string", "strings", "mapStringBool", ..., "bool" where
	// --help prints no type word, or the placeholder the flag's usage
	// names in backquotes instead of the type (the kubelet's
	// --seccomp-default, a bool, says "RuntimeDefault").
	Type string
	// Deprecated is set when the help says the flag is deprecated.
	Deprecated bool
}

// Set is the flags of one component at one Kubernetes version.
type Set struct {
	component, version string
	flags              map[string]Flag
	names              []string // sorted, for Suggest
}

// Component is the component the set is of ("kube-apiserver"); "" for a
// nil Set, as For returns with None.
func (s *Set) Component() string {
	if s == nil {
		return ""
	}

	return s.component
}

// Version is the Kubernetes release the list was taken from ("1.34.12"):
// the one asked for, or with SameMinor another patch of its minor; "" for
// a nil Set.
func (s *Set) Version() string {
	if s == nil {
		return ""
	}

	return s.version
}

// Lookup finds a flag by its long name, without dashes. Underscores match
// dashes, as the components normalize them ("log_dir" is "log-dir").
// A nil Set knows no flag.
func (s *Set) Lookup(flag string) (Flag, bool) {
	if s == nil {
		return Flag{}, false
	}

	if f, ok := s.flags[flag]; ok {
		return f, true
	}

	f, ok := s.flags[normalize(flag)]

	return f, ok
}

// Suggest returns the known flag closest to an unknown one, for a "did
// you mean" hint, or "" when none is close: one edit away for names of up
// to 5 characters, two up to 12, three beyond. Ties go to the first name
// in sorted order. Leading dashes are ignored ("--event-tl").
func (s *Set) Suggest(flag string) string {
	want := normalize(strings.ToLower(strings.TrimLeft(flag, "-")))
	if s == nil || want == "" {
		return ""
	}

	limit := 3

	switch {
	case len(want) <= 5:
		limit = 1
	case len(want) <= 12:
		limit = 2
	}

	best, bestDist := "", limit+1

	for _, n := range s.names {
		if d := levenshtein.Distance(want, n); d < bestDist {
			best, bestDist = n, d
		}
	}

	return best
}

// normalize is component-base's WordSepNormalizeFunc, which every
// component's flag set uses: "_" is "-".
func normalize(flag string) string { return strings.ReplaceAll(flag, "_", "-") }

// For returns the flags of component at a Kubernetes version ("1.34.12" or
// "v1.34.12"; a pre-release suffix is ignored past the exact match) and
// how well the list fits: Exact, SameMinor (the newest list of that
// minor), or None with a nil Set.
func For(component, version string) (*Set, Match) { return find(load(), component, version) }

// find is For over the given lists.
func find(sets map[string][]*Set, component, version string) (*Set, Match) {
	v, ok := parseVersion(version)
	if !ok {
		return nil, None
	}

	var (
		best  *Set
		bestV semver
	)

	for _, s := range sets[component] {
		sv, _ := parseVersion(s.version)
		if sv == v {
			return s, Exact
		}

		if sv.major == v.major && sv.minor == v.minor && (best == nil || sv.patch > bestV.patch) {
			best, bestV = s, sv
		}
	}

	if best == nil {
		return nil, None
	}

	return best, SameMinor
}

// Versions lists the Kubernetes versions there is data for, oldest first,
// without a leading v ("1.33.13", "1.34.12").
func Versions() []string {
	var (
		out  []string
		seen = map[string]bool{}
	)

	for _, c := range Components {
		for _, s := range load()[c] {
			if !seen[s.version] {
				seen[s.version] = true
				out = append(out, s.version)
			}
		}
	}

	slices.SortFunc(out, compareVersions)

	return out
}

type semver struct {
	major, minor, patch int
	pre                 string
}

// parseVersion reads MAJOR.MINOR[.PATCH][-PRE], with or without a v.
func parseVersion(v string) (semver, bool) {
	var sv semver

	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v, sv.pre = v[:i], v[i:]
	}

	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return sv, false
	}

	nums := []*int{&sv.major, &sv.minor, &sv.patch}

	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p != strconv.Itoa(n) {
			return sv, false
		}

		*nums[i] = n
	}

	if len(parts) == 2 {
		sv.patch = -1 // "1.34": no patch matches exactly
	}

	return sv, true
}

// compareVersions orders two versions parseVersion accepts by number.
func compareVersions(a, b string) int {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)

	if c := cmp.Compare(va.major, vb.major); c != 0 {
		return c
	}

	if c := cmp.Compare(va.minor, vb.minor); c != 0 {
		return c
	}

	return cmp.Compare(va.patch, vb.patch)
}

// data holds one generated file per Kubernetes version; the README keeps
// the directory embeddable before any version has been generated.
//
//go:embed data
var data embed.FS

// load parses the embedded files once. They are checked by the package's
// tests and by make test, so a file that does not parse is a broken build,
// not an input error: it panics.
var load = sync.OnceValue(func() map[string][]*Set {
	sets, err := parseAll(data, "data")
	if err != nil {
		panic(fmt.Sprintf("kubeflags: embedded data: %v", err))
	}

	return sets
})

// parseAll reads every v*.json in dir into sets by component, each
// component's sorted oldest first.
func parseAll(fsys fs.FS, dir string) (map[string][]*Set, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}

	sets := map[string][]*Set{}

	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}

		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}

		version, comps, err := Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}

		if want := "v" + version + ".json"; e.Name() != want {
			return nil, fmt.Errorf("%s holds Kubernetes %s: want the name %s", e.Name(), version, want)
		}

		for c, flags := range comps {
			s := &Set{component: c, version: version, flags: make(map[string]Flag, len(flags))}
			for _, f := range flags {
				s.flags[f.Name] = f
				s.names = append(s.names, f.Name)
			}

			slices.Sort(s.names)
			sets[c] = append(sets[c], s)
		}
	}

	for _, list := range sets {
		slices.SortFunc(list, func(a, b *Set) int { return compareVersions(a.version, b.version) })
	}

	return sets, nil
}

// file is the shape of a data file. Maps marshal with sorted keys and
// Encode sorts the lists, so a regenerated file is byte-identical.
type file struct {
	Kubernetes string               `json:"kubernetes"`
	Generated  string               `json:"generated"`
	Components map[string]component `json:"components"`
}

type component struct {
	// Flags maps each long name to its type.
	Flags map[string]string `json:"flags"`
	// Deprecated names the flags whose help says they are deprecated.
	Deprecated []string `json:"deprecated,omitempty"`
}

const generatedBy = "by make images (talosbox imager --kubeflags) from each component's --help; do not edit"

// Encode renders the data file of a Kubernetes version ("1.34.12") from
// the flags of each component.
func Encode(version string, components map[string][]Flag) ([]byte, error) {
	if v, ok := parseVersion(version); !ok || v.patch < 0 || v.pre != "" || strings.HasPrefix(version, "v") {
		return nil, fmt.Errorf("kubeflags: version %q: want MAJOR.MINOR.PATCH without a v", version)
	}

	f := file{Kubernetes: version, Generated: generatedBy, Components: map[string]component{}}

	for name, flags := range components {
		c := component{Flags: make(map[string]string, len(flags))}

		for _, fl := range flags {
			if fl.Name == "" || fl.Type == "" {
				return nil, fmt.Errorf("kubeflags: %s: a flag without a name or type: %+v", name, fl)
			}

			c.Flags[fl.Name] = fl.Type
			if fl.Deprecated {
				c.Deprecated = append(c.Deprecated, fl.Name)
			}
		}

		slices.Sort(c.Deprecated)
		c.Deprecated = slices.Compact(c.Deprecated)
		f.Components[name] = c
	}

	b, err := json.MarshalIndent(f, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("kubeflags: encode %s: %w", version, err)
	}

	return append(b, '\n'), nil
}

// Decode reads a data file back: its version and each component's flags,
// sorted by name.
func Decode(b []byte) (string, map[string][]Flag, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return "", nil, fmt.Errorf("decode: %w", err)
	}

	if _, ok := parseVersion(f.Kubernetes); !ok {
		return "", nil, fmt.Errorf("decode: kubernetes version %q", f.Kubernetes)
	}

	out := map[string][]Flag{}

	for name, c := range f.Components {
		if len(c.Flags) == 0 {
			return "", nil, fmt.Errorf("decode: %s has no flags", name)
		}

		flags := make([]Flag, 0, len(c.Flags))
		for n, t := range c.Flags {
			flags = append(flags, Flag{Name: n, Type: t, Deprecated: slices.Contains(c.Deprecated, n)})
		}

		for _, d := range c.Deprecated {
			if _, ok := c.Flags[d]; !ok {
				return "", nil, fmt.Errorf("decode: %s: deprecated flag %q is not among its flags", name, d)
			}
		}

		slices.SortFunc(flags, func(a, b Flag) int { return strings.Compare(a.Name, b.Name) })
		out[name] = flags
	}

	return f.Kubernetes, out, nil
}
