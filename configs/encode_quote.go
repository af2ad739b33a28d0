package configs

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// yaml.v3 writes a multi-line string that starts with white space as a
// block scalar with an indentation indicator that it cannot read back
// (FuzzDecodeValidate found "\n0" as file content). Its Node.Encode goes
// through the same emitter, so the only way around is to never hand it such
// a string: encode a copy where each one is a placeholder, then put the
// originals back into the node tree as double-quoted scalars.

// needsQuoting reports whether the emitter would mangle s.
func needsQuoting(s string) bool {
	return s != "" && strings.ContainsRune(s, '\n') && strings.ContainsRune(" \t\n", rune(s[0]))
}

// quotedForEncoding returns what to pass to the encoder: c itself in the
// usual case, or a node tree with the awkward strings quoted.
func quotedForEncoding(c *Config) any {
	if !hasAwkwardString(reflect.ValueOf(c)) {
		return c
	}

	originals := map[string]string{}
	cp := reflect.New(reflect.TypeOf(*c)).Elem()
	cloneReplacing(cp, reflect.ValueOf(c).Elem(), originals)

	var n yaml.Node
	if err := n.Encode(cp.Addr().Interface()); err != nil {
		return c // let the encoder report it
	}

	restore(&n, originals)

	return &n
}

func hasAwkwardString(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return needsQuoting(v.String())
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasAwkwardString(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && hasAwkwardString(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false // base64 text, single line
		}

		for i := range v.Len() {
			if hasAwkwardString(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if hasAwkwardString(iter.Key()) || hasAwkwardString(iter.Value()) {
				return true
			}
		}
	}

	return false
}

// cloneReplacing deep-copies src into dst, swapping awkward strings for
// placeholders recorded in originals.
func cloneReplacing(dst, src reflect.Value, originals map[string]string) {
	switch src.Kind() {
	case reflect.String:
		s := src.String()
		if needsQuoting(s) {
			ph := fmt.Sprintf("talosbox-quoted-placeholder-%d", len(originals))
			originals[ph] = s
			s = ph
		}

		dst.SetString(s)
	case reflect.Pointer:
		if src.IsNil() {
			return
		}

		p := reflect.New(src.Type().Elem())
		cloneReplacing(p.Elem(), src.Elem(), originals)
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			return
		}

		v := reflect.New(src.Elem().Type()).Elem()
		cloneReplacing(v, src.Elem(), originals)
		dst.Set(v)
	case reflect.Struct:
		dst.Set(src)

		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				cloneReplacing(dst.Field(i), src.Field(i), originals)
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}

		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			cloneReplacing(s.Index(i), src.Index(i), originals)
		}

		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}

		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		iter := src.MapRange()

		for iter.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			cloneReplacing(k, iter.Key(), originals)

			v := reflect.New(src.Type().Elem()).Elem()
			cloneReplacing(v, iter.Value(), originals)
			m.SetMapIndex(k, v)
		}

		dst.Set(m)
	default:
		dst.Set(src)
	}
}

func restore(n *yaml.Node, originals map[string]string) {
	if n.Kind == yaml.ScalarNode {
		if s, ok := originals[n.Value]; ok {
			n.Value, n.Style, n.Tag = s, yaml.DoubleQuotedStyle, "!!str"
		}
	}

	for _, c := range n.Content {
		restore(c, originals)
	}
}
