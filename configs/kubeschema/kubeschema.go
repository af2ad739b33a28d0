// Package kubeschema knows the shape of the Kubernetes component
// configurations a machine config carries (the kubelet's
// KubeletConfiguration from machine.kubelet.extraConfig, the scheduler's
// KubeSchedulerConfiguration from cluster.scheduler.config), per
// Kubernetes version, so validation can refuse a value the component would
// fail to decode at start.
//
// The schemas are never written by hand: the Kubernetes binary `make
// images` builds dumps them from its own Go types (images/kubernetes,
// component "kube-config-schema"), and internal/imagebuild writes
// data/v<VERSION>.json. Like configs/kubeflags, this package imports only
// the standard library: talosctl validates configs.
package kubeschema

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The kinds of configuration documents with schemas.
const (
	KubeletConfiguration       = "KubeletConfiguration"
	KubeSchedulerConfiguration = "KubeSchedulerConfiguration"
	CredentialProviderConfig   = "CredentialProviderConfig"
)

// Type is one node of a schema: what a value at that place may be.
type Type struct {
	// Kind is struct, map, list, string, bytes, bool, int, uint, float,
	// duration (a Go duration string), quantity (a resource quantity),
	// intOrString, time (RFC 3339) or any.
	Kind string `json:"kind"`
	// Bits bounds int, uint and float.
	Bits int `json:"bits,omitempty"`
	// Fields are a struct's, by JSON name.
	Fields map[string]*Type `json:"fields,omitempty"`
	// Elem is a map's values' or a list's items' type.
	Elem *Type `json:"elem,omitempty"`
}

// File is one version's data file.
type File struct {
	Version string           `json:"version"`
	Kinds   map[string]*Type `json:"kinds"`
	// FeatureGates are the gates the components know, by name.
	FeatureGates map[string]Gate `json:"featureGates"`
	// AdmissionPlugins are the plugins kube-apiserver can enable.
	AdmissionPlugins []string `json:"admissionPlugins"`
	// Controllers are kube-controller-manager's, from its own list.
	Controllers Controllers `json:"controllers"`
	// SchedulerPlugins are kube-scheduler's in-tree plugins, each with
	// the extension points (config names: filter, score, ...) its
	// framework accepts it at.
	SchedulerPlugins map[string][]string `json:"schedulerPlugins,omitempty"`
	// KubeletPolicies are the names the kubelet's resource managers know,
	// by config field (cpuManagerPolicy, memoryManagerPolicy,
	// topologyManagerPolicy, topologyManagerScope).
	KubeletPolicies map[string][]string `json:"kubeletPolicies,omitempty"`
}

// Controllers are what kube-controller-manager's --controllers accepts:
// its controllers by name (or an alias of one), "*", and "-name".
type Controllers struct {
	Known             []string          `json:"known,omitempty"`
	DisabledByDefault []string          `json:"disabledByDefault,omitempty"`
	Aliases           map[string]string `json:"aliases,omitempty"`
}

// Gate is one Kubernetes feature gate.
type Gate struct {
	Default bool `json:"default"`
	// LockToDefault: setting it to the other value makes the component
	// exit.
	LockToDefault bool `json:"lockToDefault,omitempty"`
}

// Gates returns the feature gates of a Kubernetes version (of its minor's
// newest release when the patch has none), nil when this build has none.
func Gates(version string) (gates map[string]Gate, from string) {
	f := find(strings.TrimPrefix(version, "v"))
	if f == nil {
		return nil, ""
	}

	return f.FeatureGates, f.Version
}

//go:embed data
var dataFS embed.FS

var load = sync.OnceValue(func() map[string]*File {
	files := map[string]*File{}

	entries, err := fs.ReadDir(dataFS, "data")
	if err != nil {
		panic(err)
	}

	for _, e := range entries {
		if path.Ext(e.Name()) != ".json" {
			continue
		}

		data, err := fs.ReadFile(dataFS, path.Join("data", e.Name()))
		if err != nil {
			panic(err)
		}

		f, err := Decode(data)
		if err != nil {
			panic(fmt.Sprintf("kubeschema: %s: %v", e.Name(), err))
		}

		files[f.Version] = f
	}

	return files
})

// Decode reads a data file.
func Decode(data []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}

	if f.Version == "" || len(f.Kinds) == 0 {
		return nil, fmt.Errorf("no version or no kinds")
	}

	return &f, nil
}

// AdmissionPlugins returns the admission plugins kube-apiserver of a
// version knows (its minor's newest when the patch has none), nil when this
// build has none.
func AdmissionPlugins(version string) (plugins []string, from string) {
	f := find(strings.TrimPrefix(version, "v"))
	if f == nil {
		return nil, ""
	}

	return f.AdmissionPlugins, f.Version
}

// Of returns the data file of a Kubernetes version (its minor's newest
// release when the patch has none), nil when this build has none. Parts
// older builds did not dump (Controllers, SchedulerPlugins,
// KubeletPolicies) are empty.
func Of(version string) *File {
	return find(strings.TrimPrefix(version, "v"))
}

// For returns the schema of kind at a Kubernetes version ("1.34.12"): that
// release's, or the newest of its minor when the patch has none (types do
// not change within a minor). nil when this build has none.
func For(kind, version string) (t *Type, from string) {
	f := find(strings.TrimPrefix(version, "v"))
	if f == nil || f.Kinds[kind] == nil {
		return nil, ""
	}

	return f.Kinds[kind], f.Version
}

// find is version's data file, or the newest of its minor.
func find(version string) *File {
	files := load()

	if f, ok := files[version]; ok {
		return f
	}

	var best *File

	for v, f := range files {
		if minorOf(v) == minorOf(version) && (best == nil || patchOf(v) > patchOf(best.Version)) {
			best = f
		}
	}

	return best
}

func minorOf(v string) string {
	if i := strings.LastIndexByte(v, '.'); i > 0 {
		return v[:i]
	}

	return v
}

func patchOf(v string) int {
	n, _ := strconv.Atoi(v[strings.LastIndexByte(v, '.')+1:]) //nolint:errcheck // 0 for a malformed one

	return n
}

// Problem is one value the component would refuse or ignore.
type Problem struct {
	// Path is the value's place under the checked root ("evictionHard",
	// "profiles[0].plugins").
	Path string
	Msg  string
	// Unknown marks a field the type does not have (a component decoding
	// strictly refuses it; a lenient one ignores it).
	Unknown bool
	// Suggest is the known field closest to an unknown one.
	Suggest string
}

// Check walks v (decoded YAML: maps, lists, strings, numbers, booleans)
// against t and lists every problem, as encoding/json decoding into the
// component's type would meet them.
func (t *Type) Check(v any) []Problem {
	var out []Problem

	t.check("", v, &out, 0)

	return out
}

func join(base, field string) string {
	if base == "" {
		return field
	}

	return base + "." + field
}

func (t *Type) check(p string, v any, out *[]Problem, depth int) {
	if v == nil || t == nil || depth > 64 {
		return // null decodes to the zero value
	}

	bad := func(format string, args ...any) {
		*out = append(*out, Problem{Path: p, Msg: fmt.Sprintf(format, args...)})
	}

	switch t.Kind {
	case "any":
	case "struct":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want a mapping, got %s", describe(v))

			return
		}

		for _, k := range sortedKeys(m) {
			ft, ok := t.Fields[k]
			if !ok {
				*out = append(*out, Problem{Path: join(p, k), Msg: fmt.Sprintf("unknown field %q", k), Unknown: true, Suggest: closest(k, t.Fields)})

				continue
			}

			ft.check(join(p, k), m[k], out, depth+1)
		}
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want a mapping, got %s", describe(v))

			return
		}

		for _, k := range sortedKeys(m) {
			t.Elem.check(p+"["+strconv.Quote(k)+"]", m[k], out, depth+1)
		}
	case "list":
		l, ok := v.([]any)
		if !ok {
			bad("want a list, got %s", describe(v))

			return
		}

		for i, item := range l {
			t.Elem.check(p+"["+strconv.Itoa(i)+"]", item, out, depth+1)
		}
	case "string", "bytes":
		if _, ok := v.(string); !ok {
			bad("want a string, got %s (quote it)", describe(v))
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			bad("want true or false, got %s", describe(v))
		}
	case "int", "uint":
		if msg := checkInteger(v, t.Kind == "uint", t.Bits); msg != "" {
			bad("%s", msg)
		}
	case "float":
		if _, ok := number(v); !ok {
			bad("want a number, got %s", describe(v))
		}
	case "duration":
		s, ok := v.(string)
		if !ok {
			bad(`want a duration such as "30s", got %s`, describe(v))
		} else if _, err := time.ParseDuration(s); err != nil {
			bad(`want a duration such as "30s", got %q`, s)
		}
	case "quantity":
		if !isQuantity(v) {
			bad("want a quantity such as 100Mi or 500m, got %s", describe(v))
		}
	case "intOrString":
		switch v.(type) {
		case string:
		default:
			if msg := checkInteger(v, false, 32); msg != "" {
				bad("want an integer or a string, got %s", describe(v))
			}
		}
	case "time":
		s, ok := v.(string)
		if !ok {
			bad("want an RFC 3339 time, got %s", describe(v))
		} else if _, err := time.Parse(time.RFC3339, s); err != nil {
			bad("want an RFC 3339 time, got %q", s)
		}
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}

	return 0, false
}

func checkInteger(v any, unsigned bool, bits int) string {
	if bits == 0 {
		bits = 64
	}

	f, ok := number(v)
	if !ok {
		return fmt.Sprintf("want an integer, got %s", describe(v))
	}

	if f != math.Trunc(f) {
		return fmt.Sprintf("want an integer, got %v", v)
	}

	lo, hi := -math.Pow(2, float64(bits-1)), math.Pow(2, float64(bits-1))-1
	if unsigned {
		lo, hi = 0, math.Pow(2, float64(bits))-1
	}

	if f < lo || f > hi {
		return fmt.Sprintf("%v is out of range (%.0f to %.0f)", v, lo, hi)
	}

	return ""
}

// isQuantity accepts what resource.Quantity unmarshals: a number, or a
// string of digits with an optional suffix or exponent.
func isQuantity(v any) bool {
	if _, ok := number(v); ok {
		return true
	}

	s, ok := v.(string)
	if !ok || s == "" {
		return false
	}

	i := 0
	if s[0] == '+' || s[0] == '-' {
		i++
	}

	digits := 0
	for ; i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.'); i++ {
		digits++
	}

	if digits == 0 {
		return false
	}

	switch suffix := s[i:]; suffix {
	case "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E":
		return true
	default:
		if suffix[0] != 'e' && suffix[0] != 'E' {
			return false
		}

		_, err := strconv.Atoi(suffix[1:])

		return err == nil
	}
}

func describe(v any) string {
	switch t := v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return strconv.Quote(t)
	default:
		return fmt.Sprint(t)
	}
}
