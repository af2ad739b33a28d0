package bus

import (
	"reflect"
	"sync"
)

// flatTypes caches, per spec type, whether a plain assignment is already a
// deep copy (no pointers, slices, maps, interfaces or channels inside).
var flatTypes sync.Map // reflect.Type -> bool

// copySpecInto deep-copies *src into *dst. dst lives inside the new
// resource, so the reflective path writes there instead of allocating a
// temporary.
func copySpecInto[S any](dst, src *S) {
	if c, ok := any(src).(Copier[S]); ok {
		*dst = c.DeepCopy()
		return
	}

	t := reflect.TypeFor[S]()

	flat, ok := flatTypes.Load(t)
	if !ok {
		flat = isFlat(t, map[reflect.Type]bool{})
		flatTypes.Store(t, flat)
	}

	if flat.(bool) { //nolint:forcetypeassert // only bools are stored
		*dst = *src
		return
	}

	deepCopyValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem())
}

func isFlat(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}

	seen[t] = true

	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	case reflect.Array:
		return isFlat(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if !isFlat(t.Field(i).Type, seen) {
				return false
			}
		}
	}

	return true
}

// deepCopyValue copies src into the settable dst, following pointers,
// slices, maps and interfaces. Unexported fields are copied as values.
func deepCopyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}

		p := reflect.New(src.Type().Elem())
		deepCopyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}

		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopyValue(s.Index(i), src.Index(i))
		}

		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}

		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		iter := src.MapRange()

		for iter.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopyValue(v, iter.Value())
			m.SetMapIndex(iter.Key(), v)
		}

		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}

		v := reflect.New(src.Elem().Type()).Elem()
		deepCopyValue(v, src.Elem())
		dst.Set(v)
	case reflect.Struct:
		if !dst.CanSet() {
			return
		}

		dst.Set(src) // copies unexported fields too; exported ones deepened below
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				deepCopyValue(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Array:
		for i := range src.Len() {
			deepCopyValue(dst.Index(i), src.Index(i))
		}
	default:
		dst.Set(src)
	}
}
