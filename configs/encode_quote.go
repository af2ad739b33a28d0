package configs

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/deepcopy"
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

// quotedForEncoding returns what to pass to the encoder for c (a pointer
// to a config or a document): c itself in the usual case, or a node tree
// with the awkward strings quoted.
func quotedForEncoding(c any) any {
	if !hasAwkwardString(reflect.ValueOf(c)) {
		return c
	}

	originals := map[string]string{}
	cp := reflect.New(reflect.TypeOf(c).Elem()).Elem()
	deepcopy.Value(cp, reflect.ValueOf(c).Elem(), func(s string) string {
		if !needsQuoting(s) {
			return s
		}

		ph := fmt.Sprintf("talosbox-quoted-placeholder-%d", len(originals))
		originals[ph] = s

		return ph
	})

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
