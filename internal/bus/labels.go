package bus

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Label is one key/value pair.
type Label struct {
	Key   string
	Value string
}

// Labels is a small sorted set of key/value pairs. It is copy-on-write:
// Set and Delete build a new backing slice, so copies of a Metadata share
// labels safely and copying a resource costs no allocation for them.
type Labels struct {
	kv []Label
}

// LabelsFrom builds labels from a map.
func LabelsFrom(m map[string]string) Labels {
	var l Labels
	for k, v := range m {
		l.Set(k, v)
	}

	return l
}

func (l Labels) index(key string) (int, bool) {
	return slices.BinarySearchFunc(l.kv, key, func(e Label, k string) int { return strings.Compare(e.Key, k) })
}

// Get returns the value of key.
func (l Labels) Get(key string) (string, bool) {
	if i, ok := l.index(key); ok {
		return l.kv[i].Value, true
	}

	return "", false
}

// Set sets key to value.
func (l *Labels) Set(key, value string) {
	i, ok := l.index(key)
	if ok && l.kv[i].Value == value {
		return
	}

	kv := make([]Label, 0, len(l.kv)+1)
	kv = append(kv, l.kv[:i]...)
	kv = append(kv, Label{Key: key, Value: value})

	if ok {
		i++
	}

	l.kv = append(kv, l.kv[i:]...)
}

// Delete removes key.
func (l *Labels) Delete(key string) {
	i, ok := l.index(key)
	if !ok {
		return
	}

	l.kv = slices.Concat(l.kv[:i], l.kv[i+1:])
}

// Len is the number of labels.
func (l Labels) Len() int { return len(l.kv) }

// All returns the labels in key order; the slice must not be modified.
func (l Labels) All() []Label { return l.kv }

// Equal reports whether both sets hold the same pairs.
func (l Labels) Equal(o Labels) bool { return slices.Equal(l.kv, o.kv) }

// Map returns the labels as a new map.
func (l Labels) Map() map[string]string {
	m := make(map[string]string, len(l.kv))
	for _, e := range l.kv {
		m[e.Key] = e.Value
	}

	return m
}

// MarshalYAML renders labels as a mapping.
func (l Labels) MarshalYAML() (any, error) { return l.Map(), nil }

// UnmarshalYAML reads labels from a mapping.
func (l *Labels) UnmarshalYAML(unmarshal func(any) error) error {
	var m map[string]string
	if err := unmarshal(&m); err != nil {
		return err
	}

	*l = LabelsFrom(m)

	return nil
}

// IsZero lets omitempty drop empty labels.
func (l Labels) IsZero() bool { return len(l.kv) == 0 }

// Finalizers is the set of consumers holding a resource back from
// destruction. Like Labels it is copy-on-write.
type Finalizers struct {
	f []string
}

// Has reports whether fin is present.
func (f Finalizers) Has(fin string) bool { return slices.Contains(f.f, fin) }

// Len is the number of finalizers.
func (f Finalizers) Len() int { return len(f.f) }

// List returns a copy of the finalizers in the order they were added.
func (f Finalizers) List() []string { return slices.Clone(f.f) }

// IsZero lets omitempty drop empty finalizers.
func (f Finalizers) IsZero() bool { return len(f.f) == 0 }

// add returns the set with fins added, and whether it changed.
func (f Finalizers) add(fins ...string) (Finalizers, bool) {
	out := f.f
	changed := false

	for _, fin := range fins {
		if !slices.Contains(out, fin) {
			if !changed {
				out = slices.Clip(out) // the next append copies
				changed = true
			}

			out = append(out, fin)
		}
	}

	return Finalizers{f: out}, changed
}

// remove returns the set without fins, and whether it changed.
func (f Finalizers) remove(fins ...string) (Finalizers, bool) {
	out := slices.DeleteFunc(slices.Clone(f.f), func(s string) bool { return slices.Contains(fins, s) })
	if len(out) == len(f.f) {
		return f, false
	}

	return Finalizers{f: out}, true
}

// MarshalYAML renders finalizers as a list.
func (f Finalizers) MarshalYAML() (any, error) { return f.f, nil }

// UnmarshalYAML reads finalizers from a list.
func (f *Finalizers) UnmarshalYAML(unmarshal func(any) error) error {
	return unmarshal(&f.f)
}

// LabelOp is a label query operator.
type LabelOp uint8

const (
	// LabelExists matches when the key is present.
	LabelExists LabelOp = iota
	// LabelNotExists matches when the key is absent.
	LabelNotExists
	// LabelEqual matches when the key has the first value.
	LabelEqual
	// LabelNotEqual matches when the key is absent or has another value.
	LabelNotEqual
	// LabelIn matches when the key has one of the values.
	LabelIn
)

// LabelTerm is one condition of a query.
type LabelTerm struct {
	Key    string
	Op     LabelOp
	Values []string
}

// LabelQuery matches labels that satisfy every term.
type LabelQuery struct {
	Terms []LabelTerm
}

// Matches reports whether l satisfies the query. An empty query matches all.
func (q LabelQuery) Matches(l Labels) bool {
	for _, t := range q.Terms {
		v, ok := l.Get(t.Key)

		var match bool

		switch t.Op {
		case LabelExists:
			match = ok
		case LabelNotExists:
			match = !ok
		case LabelEqual:
			match = ok && len(t.Values) > 0 && v == t.Values[0]
		case LabelNotEqual:
			match = !ok || len(t.Values) == 0 || v != t.Values[0]
		case LabelIn:
			match = ok && slices.Contains(t.Values, v)
		}

		if !match {
			return false
		}
	}

	return true
}

// ParseLabelQuery parses a kubectl-style selector: "k=v", "k!=v", "k",
// "!k" and "k in (a,b)", separated by commas.
func ParseLabelQuery(s string) (LabelQuery, error) {
	var q LabelQuery

	for _, part := range splitSelector(s) {
		part = strings.TrimSpace(part)

		switch {
		case part == "":
			continue
		case strings.HasPrefix(part, "!"):
			q.Terms = append(q.Terms, LabelTerm{Key: strings.TrimSpace(part[1:]), Op: LabelNotExists})
		case strings.Contains(part, "!="):
			k, v, _ := strings.Cut(part, "!=")
			q.Terms = append(q.Terms, LabelTerm{Key: strings.TrimSpace(k), Op: LabelNotEqual, Values: []string{strings.TrimSpace(v)}})
		case strings.Contains(part, "="):
			k, v, _ := strings.Cut(part, "=")
			q.Terms = append(q.Terms, LabelTerm{Key: strings.TrimSpace(k), Op: LabelEqual, Values: []string{strings.TrimSpace(strings.TrimPrefix(v, "="))}})
		case strings.Contains(part, " in "):
			k, rest, _ := strings.Cut(part, " in ")
			rest = strings.TrimSpace(rest)

			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return LabelQuery{}, fmt.Errorf("label selector %q: expected \"key in (v1,v2)\"", part)
			}

			vals := strings.Split(rest[1:len(rest)-1], ",")
			for i := range vals {
				vals[i] = strings.TrimSpace(vals[i])
			}

			sort.Strings(vals)
			q.Terms = append(q.Terms, LabelTerm{Key: strings.TrimSpace(k), Op: LabelIn, Values: vals})
		default:
			q.Terms = append(q.Terms, LabelTerm{Key: part, Op: LabelExists})
		}

		if t := q.Terms[len(q.Terms)-1]; t.Key == "" {
			return LabelQuery{}, fmt.Errorf("label selector %q: empty key", part)
		}
	}

	return q, nil
}

// splitSelector splits on commas outside parentheses.
func splitSelector(s string) []string {
	var (
		parts []string
		depth int
		start int
	)

	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}

	return append(parts, s[start:])
}
