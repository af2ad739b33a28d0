// Package deepcopy copies Go values by reflection, following pointers,
// slices, maps and interfaces, so the copy shares no mutable memory with
// the original. The bus uses it for specs without a DeepCopy method, and
// the config encoder to rewrite strings on a private copy.
package deepcopy

import "reflect"

// Value copies src into the settable dst. When str is not nil every string
// (including map keys) passes through it. Unexported fields are copied as
// values, not followed.
func Value(dst, src reflect.Value, str func(string) string) {
	switch src.Kind() {
	case reflect.String:
		if str == nil {
			dst.Set(src)
			return
		}

		dst.SetString(str(src.String()))
	case reflect.Pointer:
		if src.IsNil() {
			return
		}

		p := reflect.New(src.Type().Elem())
		Value(p.Elem(), src.Elem(), str)
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}

		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			Value(s.Index(i), src.Index(i), str)
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
			Value(k, iter.Key(), str)

			v := reflect.New(src.Type().Elem()).Elem()
			Value(v, iter.Value(), str)
			m.SetMapIndex(k, v)
		}

		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}

		v := reflect.New(src.Elem().Type()).Elem()
		Value(v, src.Elem(), str)
		dst.Set(v)
	case reflect.Struct:
		if !dst.CanSet() {
			return
		}

		dst.Set(src) // unexported fields as values; exported ones deepened below

		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				Value(dst.Field(i), src.Field(i), str)
			}
		}
	case reflect.Array:
		for i := range src.Len() {
			Value(dst.Index(i), src.Index(i), str)
		}
	default:
		dst.Set(src)
	}
}
