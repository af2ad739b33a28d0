package bus

import (
	"reflect"
	"sync"

	"github.com/talosbox/talosbox/internal/deepcopy"
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

	deepcopy.Value(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem(), nil)
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
