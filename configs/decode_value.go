package configs

import (
	"encoding"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	nullTag   = "!!null"
	binaryTag = "!!binary"
	mergeTag  = "!!merge"
	strTag    = "!!str"

	// maxVisits bounds the work an input can cause: aliases let a small
	// document expand into a huge tree ("billion laughs"). A large real
	// config has a few thousand nodes.
	maxVisits = 200_000
)

var (
	durationType      = reflect.TypeFor[time.Duration]()
	unstructuredType  = reflect.TypeFor[Unstructured]()
	textUnmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoder fills Go values from a yaml.Node tree. It exists instead of
// yaml.v3's own strict mode because that one reports neither the config path
// of a problem nor more than the first unknown field per struct.
type decoder struct {
	errs    []error
	path    []string
	visits  int
	aborted bool
	// lines, when not nil, collects Positions.
	lines map[string]int
	// kindsListed: a problem has listed the kinds talosbox implements
	// already; the next ones refer to it.
	kindsListed bool
}

func (d *decoder) pathString() string {
	return strings.TrimPrefix(strings.Join(d.path, ""), ".")
}

// fail records a problem with the value at the current path.
func (d *decoder) fail(n *yaml.Node, format string, args ...any) {
	path := d.pathString()
	msg := fmt.Sprintf(format, args...)

	if path != "" {
		msg = path + ": " + msg
	}

	d.errs = append(d.errs, &DecodeError{Line: n.Line, Path: path, Msg: msg})
}

func (d *decoder) value(n *yaml.Node, v reflect.Value) {
	if d.aborted {
		return
	}

	if d.visits++; d.visits > maxVisits {
		d.aborted = true
		d.errs = append(d.errs, &DecodeError{Line: n.Line, Msg: "config is too large or expands too many aliases"})

		return
	}

	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}

	d.record(n)

	if n.Kind == yaml.ScalarNode && n.ShortTag() == nullTag {
		// An explicit null leaves the zero value, like an absent key, so
		// "network:" with nothing under it is accepted.
		v.SetZero()

		return
	}

	t := v.Type()

	switch {
	case t == durationType:
		d.duration(n, v)

		return
	case t == unstructuredType:
		d.unstructured(n, v)

		return
	case t == argValueType:
		d.argValue(n, v) // a string or a list of strings (args.go)

		return
	case reflect.PointerTo(t).Implements(textUnmarshalType):
		if !d.expect(n, yaml.ScalarNode) {
			return
		}

		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			d.fail(n, "%v", err)
		}

		return
	}

	switch t.Kind() {
	case reflect.Pointer:
		elem := reflect.New(t.Elem())
		d.value(n, elem.Elem())
		v.Set(elem)
	case reflect.Struct:
		d.structValue(n, v)
	case reflect.Map:
		d.mapValue(n, v)
	case reflect.Slice:
		d.sliceValue(n, v)
	case reflect.String:
		if d.expect(n, yaml.ScalarNode) {
			d.stringValue(n, v)
		}
	case reflect.Bool:
		if d.expect(n, yaml.ScalarNode) {
			d.boolValue(n, v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if d.expect(n, yaml.ScalarNode) {
			d.intValue(n, v)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if d.expect(n, yaml.ScalarNode) {
			d.uintValue(n, v)
		}
	default:
		// Only reachable if a config type gains a field of a kind this
		// decoder was not taught; fail loudly rather than skip data.
		d.fail(n, "internal error: cannot decode into %s", t)
	}
}

var kindNames = map[yaml.Kind]string{
	yaml.MappingNode:  "a mapping",
	yaml.SequenceNode: "a sequence",
	yaml.ScalarNode:   "a single value",
}

func (d *decoder) expect(n *yaml.Node, kind yaml.Kind) bool {
	if n.Kind == kind {
		return true
	}

	d.fail(n, "expected %s, got %s", kindNames[kind], describe(n))

	return false
}

// fieldInfo maps YAML keys to struct field indexes for one struct type.
type fieldInfo struct {
	index map[string]int
	names []string
}

var fieldCache sync.Map // reflect.Type -> *fieldInfo

func fieldsOf(t reflect.Type) *fieldInfo {
	if fi, ok := fieldCache.Load(t); ok {
		return fi.(*fieldInfo) //nolint:forcetypeassert // only *fieldInfo is stored
	}

	fi := &fieldInfo{index: map[string]int{}}

	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}

		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}

		if name == "" {
			name = strings.ToLower(f.Name)
		}

		fi.index[name] = i
		fi.names = append(fi.names, name)
	}

	actual, _ := fieldCache.LoadOrStore(t, fi)

	return actual.(*fieldInfo) //nolint:forcetypeassert // only *fieldInfo is stored
}

func (d *decoder) structValue(n *yaml.Node, v reflect.Value) {
	if !d.expect(n, yaml.MappingNode) {
		return
	}

	fi := fieldsOf(v.Type())

	d.eachPair(n, func(key, val *yaml.Node, name string) {
		idx, known := fi.index[name]
		if !known {
			d.unknownField(key, name, fi)

			return
		}

		d.path = append(d.path, "."+name)
		d.record(key) // a section is where its key is written
		d.value(val, v.Field(idx))
		d.path = d.path[:len(d.path)-1]
	})
}

// eachPair calls fn for each key/value of a mapping, reporting keys that
// are not scalars or repeat an earlier key (and skipping them).
func (d *decoder) eachPair(n *yaml.Node, fn func(key, val *yaml.Node, name string)) {
	seen := make(map[string]int, len(n.Content)/2)

	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]

		name, ok := d.key(key)
		if !ok {
			continue
		}

		if first, dup := seen[name]; dup {
			d.fail(key, "duplicate key %q (first at line %d)", name, first)

			continue
		}

		seen[name] = key.Line

		fn(key, val, name)
	}
}

func (d *decoder) unknownField(key *yaml.Node, name string, fi *fieldInfo) {
	where := d.pathString()
	if where == "" {
		where = "the config root"
	}

	msg := fmt.Sprintf("unknown field %q in %s", name, where)

	if s := suggest(name, fi.names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}

	d.errs = append(d.errs, &DecodeError{Line: key.Line, Path: d.pathString(), Msg: msg})
}

// key returns a mapping key as a string.
func (d *decoder) key(key *yaml.Node) (string, bool) {
	for key.Kind == yaml.AliasNode {
		key = key.Alias
	}

	if key.Kind != yaml.ScalarNode {
		d.fail(key, "mapping keys must be single values, got %s", describe(key))

		return "", false
	}

	switch key.ShortTag() {
	case mergeTag:
		d.fail(key, "merge keys (<<) are not supported")

		return "", false
	case binaryTag:
		b, err := base64.StdEncoding.DecodeString(key.Value)
		if err != nil {
			d.fail(key, "invalid !!binary key: %v", err)

			return "", false
		}

		return string(b), true
	}

	return key.Value, true
}

func (d *decoder) mapValue(n *yaml.Node, v reflect.Value) {
	if !d.expect(n, yaml.MappingNode) || len(n.Content) == 0 {
		return
	}

	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)

	d.eachPair(n, func(key, val *yaml.Node, name string) {
		elem := reflect.New(t.Elem()).Elem()

		d.path = append(d.path, "["+strconv.Quote(name)+"]")
		d.record(key)
		d.value(val, elem)
		d.path = d.path[:len(d.path)-1]

		m.SetMapIndex(reflect.ValueOf(name).Convert(t.Key()), elem)
	})

	v.Set(m)
}

func (d *decoder) sliceValue(n *yaml.Node, v reflect.Value) {
	if !d.expect(n, yaml.SequenceNode) || len(n.Content) == 0 {
		// Empty sequences decode to nil so that encoding (which omits
		// empty fields) and decoding again gives an equal value.
		return
	}

	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))

	for i, item := range n.Content {
		d.path = append(d.path, "["+strconv.Itoa(i)+"]")
		d.value(item, s.Index(i))
		d.path = d.path[:len(d.path)-1]
	}

	v.Set(s)
}

func (d *decoder) stringValue(n *yaml.Node, v reflect.Value) {
	if n.ShortTag() != binaryTag {
		v.SetString(n.Value)

		return
	}

	// yaml.v3 writes strings that are not valid UTF-8 as !!binary.
	b, err := base64.StdEncoding.DecodeString(n.Value)
	if err != nil {
		d.fail(n, "invalid !!binary value: %v", err)

		return
	}

	v.SetString(string(b))
}

func (d *decoder) boolValue(n *yaml.Node, v reflect.Value) {
	// A quoted (or !!str-tagged) value is a string whatever it spells:
	// yaml.v3 refuses it for a bool, and so does Talos, so "yes" and "true"
	// in quotes must not silently turn into a boolean here.
	if isString(n) {
		d.fail(n, "want a boolean (true or false), got the string %q", truncate(n.Value, 40))

		return
	}

	// YAML 1.1 spellings are accepted because yaml.v3 accepts them for typed
	// booleans and older Talos configs use them.
	switch n.Value {
	case "true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
		v.SetBool(true)
	case "false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		v.SetBool(false)
	default:
		d.fail(n, "expected a boolean, got %s", describe(n))
	}
}

// isString reports whether a scalar was written as a string on purpose:
// quoted, or tagged !!str explicitly. A plain yes or on is also a !!str to
// YAML 1.2, but yaml.v3 reads it as a boolean for compatibility with 1.1.
func isString(n *yaml.Node) bool {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return true
	}

	return n.Style&yaml.TaggedStyle != 0 && n.ShortTag() == strTag
}

func (d *decoder) intValue(n *yaml.Node, v reflect.Value) {
	i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v.OverflowInt(i) {
		d.fail(n, "expected an integer that fits in %s, got %s", v.Type().Kind(), describe(n))

		return
	}

	v.SetInt(i)
}

func (d *decoder) uintValue(n *yaml.Node, v reflect.Value) {
	u, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v.OverflowUint(u) {
		d.fail(n, "expected a non-negative integer that fits in %s, got %s", v.Type().Kind(), describe(n))

		return
	}

	v.SetUint(u)
}

func (d *decoder) duration(n *yaml.Node, v reflect.Value) {
	if !d.expect(n, yaml.ScalarNode) {
		return
	}

	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.fail(n, "invalid duration %s: expected a Go duration such as \"30s\" or \"1h30m\"", describe(n))

		return
	}

	v.SetInt(int64(dur))
}

func (d *decoder) unstructured(n *yaml.Node, v reflect.Value) {
	if !d.expect(n, yaml.MappingNode) || len(n.Content) == 0 {
		return
	}

	var m map[string]any
	if err := n.Decode(&m); err != nil {
		d.unstructuredError(n, err)

		return
	}

	for k, val := range m {
		m[k] = stringKeyed(val)
	}

	d.recordFreeForm(n, d.pathString(), 0)

	v.Set(reflect.ValueOf(Unstructured(m)))
}

// stringKeyed turns yaml.v3's map[any]any into map[string]any wherever all
// the keys are strings. yaml.v3 picks the general map when a key carries a
// tag other than !!str (`!!binary MA==`, `!foo x`) even though it decodes
// to a string, and re-encoding drops the tag, so without this a config
// would not decode to itself again.
func stringKeyed(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			t[k] = stringKeyed(val)
		}
	case map[any]any:
		// Into a new map: in place, t[k] = ... with a .nan key (never equal
		// to itself) would add an entry rather than replace one.
		strs := make(map[string]any, len(t))
		anys := make(map[any]any, len(t))

		for k, val := range t {
			val = stringKeyed(val)
			anys[k] = val

			if s, ok := k.(string); ok && strs != nil {
				strs[s] = val
			} else {
				strs = nil
			}
		}

		if strs != nil {
			return strs
		}

		return anys
	case []any:
		for i, val := range t {
			t[i] = stringKeyed(val)
		}
	}

	return v
}

// yamlTypeErrLine splits the "line N: msg" entries of a *yaml.TypeError.
var yamlTypeErrLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })

// unstructuredError reports yaml.v3's own decode errors (duplicate keys in
// free-form sections, mostly) at their own lines, under the section's path.
func (d *decoder) unstructuredError(n *yaml.Node, err error) {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		d.fail(n, "%s", trimYAMLPrefix(err.Error()))

		return
	}

	for _, e := range te.Errors {
		line := n.Line
		if m := yamlTypeErrLine().FindStringSubmatch(e); m != nil {
			line, _ = strconv.Atoi(m[1]) //nolint:errcheck // the pattern only matches digits
			e = m[2]
		}

		d.fail(&yaml.Node{Line: line}, "%s", e)
	}
}
