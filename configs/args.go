package configs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Args are a component's extraArgs by flag name (without dashes), as
// Talos types them (meta.Args): each value is one string, or a list of
// strings, which the component gets as the flag repeated in order
// (`--flag=a --flag=b`). A nil Args reads as empty.
type Args map[string]ArgValue

// ArgValue is one flag's value as written: a single string, or a list.
// Build one with ArgString or ArgList and read it with the methods; the
// fields are exported for the config's reflection walkers (the copies and
// the encoder's quoting reach every string through them).
type ArgValue struct {
	// Value is the value written as one string.
	Value string
	// List is the value written as a list: not nil, even when empty, for
	// a list; nil for a single string.
	List []string
}

// ArgString is a flag given once.
func ArgString(s string) ArgValue { return ArgValue{Value: s} }

// ArgList is a flag given once per value, in order. No values is an empty
// list, which Talos renders as no flag at all.
func ArgList(values ...string) ArgValue {
	if values == nil {
		values = []string{}
	}

	return ArgValue{List: slices.Clone(values)}
}

// ArgsOf makes Args of single values.
func ArgsOf(m map[string]string) Args {
	if m == nil {
		return nil
	}

	out := make(Args, len(m))
	for k, v := range m {
		out[k] = ArgString(v)
	}

	return out
}

// IsList reports whether the value was written as a list.
func (v ArgValue) IsList() bool { return v.List != nil }

// Values are the flag's values in the order it is repeated: one for a
// single string.
func (v ArgValue) Values() []string {
	if v.List != nil {
		return slices.Clone(v.List)
	}

	return []string{v.Value}
}

// String is the value as one line: the string, or the list in brackets.
func (v ArgValue) String() string {
	if v.List == nil {
		return v.Value
	}

	return "[" + strings.Join(v.List, ", ") + "]"
}

// Has reports whether the flag is set.
func (a Args) Has(name string) bool {
	_, ok := a[name]

	return ok
}

// Get is the value of a flag given once: its string, or the item of a
// one-item list. ok is false when the flag is not set or is repeated (a
// list of any other length): read those with Values.
func (a Args) Get(name string) (string, bool) {
	v, ok := a[name]
	if !ok {
		return "", false
	}

	switch {
	case v.List == nil:
		return v.Value, true
	case len(v.List) == 1:
		return v.List[0], true
	default:
		return "", false
	}
}

// Values are every value of the flag in order; nil when it is not set.
func (a Args) Values(name string) []string {
	v, ok := a[name]
	if !ok {
		return nil
	}

	return v.Values()
}

// Joined is the flag's values joined by commas ("" when it is not set):
// what a comma-separated list flag (feature gates, admission plugins,
// controllers) reads the same as its repeats.
func (a Args) Joined(name string) string {
	return strings.Join(a.Values(name), ",")
}

// Set sets a flag to a single value; a must not be nil.
func (a Args) Set(name, value string) { a[name] = ArgString(value) }

// Names are the flags set, sorted.
func (a Args) Names() []string { return slices.Sorted(maps.Keys(a)) }

// Clone copies a, lists included; nil stays nil.
func (a Args) Clone() Args {
	if a == nil {
		return nil
	}

	out := make(Args, len(a))
	for k, v := range a {
		out[k] = v.clone()
	}

	return out
}

// clone copies the list of a list (an empty one stays a list).
func (v ArgValue) clone() ArgValue {
	if v.List != nil {
		v.List = slices.Clone(v.List)
	}

	return v
}

// ToMap is every flag's values, as Talos's ToMap gives them to its
// argument builder.
func (a Args) ToMap() map[string][]string {
	out := make(map[string][]string, len(a))
	for k, v := range a {
		out[k] = v.Values()
	}

	return out
}

// MarshalYAML writes the value the way it was written.
func (v ArgValue) MarshalYAML() (any, error) {
	if v.List != nil {
		return v.List, nil
	}

	return v.Value, nil
}

// errArgValue is what a value of another shape gets.
var errArgValue = errors.New("want a string, or a list of strings for a repeated flag (--flag=a --flag=b)")

// UnmarshalYAML reads a single value or a list of single values, for
// readers of resources; a config is read by Decode, with the same rule.
func (v *ArgValue) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*v = ArgValue{}

		return n.Decode(&v.Value)
	case yaml.SequenceNode:
		list := make([]string, 0, len(n.Content))

		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: item %d: %w", item.Line, i, errArgValue)
			}

			list = append(list, item.Value)
		}

		*v = ArgValue{List: list}

		return nil
	default:
		return fmt.Errorf("line %d: %w", n.Line, errArgValue)
	}
}

// MarshalJSON writes a string or an array of strings.
func (v ArgValue) MarshalJSON() ([]byte, error) {
	if v.List != nil {
		return json.Marshal(v.List)
	}

	return json.Marshal(v.Value)
}

// UnmarshalJSON reads a string or an array of strings.
func (v *ArgValue) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*v = ArgValue{Value: s}

		return nil
	}

	var list []string
	if err := json.Unmarshal(b, &list); err != nil || list == nil {
		return errArgValue
	}

	*v = ArgValue{List: list}

	return nil
}

var argValueType = reflect.TypeFor[ArgValue]()

// argValue decodes one extraArgs value (an explicit null, like an empty
// key, has left the empty string already).
func (d *decoder) argValue(n *yaml.Node, v reflect.Value) {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string

		d.stringValue(n, reflect.ValueOf(&s).Elem())
		v.Set(reflect.ValueOf(ArgValue{Value: s}))
	case yaml.SequenceNode:
		list := make([]string, len(n.Content))

		for i, item := range n.Content {
			d.path = append(d.path, "["+strconv.Itoa(i)+"]")

			if deref(item).Kind == yaml.ScalarNode {
				d.value(item, reflect.ValueOf(&list[i]).Elem())
			} else {
				d.fail(item, "each item of a repeated flag's list is one value (one --flag=value), got %s", describe(deref(item)))
			}

			d.path = d.path[:len(d.path)-1]
		}

		v.Set(reflect.ValueOf(ArgValue{List: list}))
	default:
		d.fail(n, "%v, got %s", errArgValue, describe(n))
	}
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}

	return n
}

// IsArgValue reports whether a strategic merge patch's path names one
// flag of an extraArgs map (Args): the v1alpha1 document's keys from its
// root, or a typed document's kind then its keys, "*" for an item of a
// list. A patch replaces such a value whole, list or not, as Talos's
// Args.Merge does; the other flags of the map are kept.
func IsArgValue(path []string) bool {
	if len(path) == 0 {
		return false
	}

	t, rest := reflect.TypeFor[Config](), path
	if ki, ok := documentKinds[path[0]]; ok {
		t, rest = reflect.TypeOf(ki.new()), path[1:]
	}

	for i, name := range rest {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}

		switch {
		case t == reflect.TypeFor[Args]():
			return i == len(rest)-1
		case t.Kind() == reflect.Slice && name == "*":
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			idx, ok := fieldsOf(t).index[name]
			if !ok {
				return false
			}

			t = t.Field(idx).Type
		default:
			return false
		}
	}

	return false
}
