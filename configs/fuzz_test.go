package configs_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// FuzzDecodeValidate feeds arbitrary bytes to Decode and, when they decode,
// to Validate and Encode: nothing may panic, and whatever decodes must
// re-encode to something that decodes to an equal config and encodes the
// same again.
func FuzzDecodeValidate(f *testing.F) {
	for _, glob := range []string{"testdata/seeds/*.yaml", "testdata/full/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}

		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}

			f.Add(data)
		}
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := configs.Decode(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}

			return
		}

		for _, mode := range []configs.Mode{configs.ModeMetal, configs.ModeContainer, configs.ModeCloud} {
			_, _ = cfg.Validate(mode) // only checking it does not panic
			_, _ = cfg.Validate(mode, configs.WithStrict(true))
		}

		out, err := cfg.Encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}

		again, err := configs.Decode(out)
		if err != nil {
			t.Fatalf("decoding the encoded config: %v\n%s", err, out)
		}

		if !equalNaN(reflect.ValueOf(cfg), reflect.ValueOf(again)) {
			t.Fatalf("round trip changed the config:\n%s\nfirst:  %#v\nsecond: %#v", out, cfg, again)
		}

		out2, err := again.Encode()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("encoding is not stable (%v):\n%s\n---\n%s", err, out, out2)
		}

		if d, err := configs.Diff(cfg, again); err != nil || d != "" {
			t.Fatalf("diff of equal configs = %q, %v", d, err)
		}
	})
}

// equalNaN is reflect.DeepEqual except that NaN equals NaN: free-form
// sections can hold .nan, which is never equal to itself.
func equalNaN(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}

	if a.Type() != b.Type() {
		return false
	}

	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		fa, fb := a.Float(), b.Float()

		return fa == fb || (math.IsNaN(fa) && math.IsNaN(fb))
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}

		return equalNaN(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}

		for i := range a.Len() {
			if !equalNaN(a.Index(i), b.Index(i)) {
				return false
			}
		}

		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}

		// Keys are matched by their printed form, so NaN keys match too.
		bm := map[string]reflect.Value{}
		for it := b.MapRange(); it.Next(); {
			bm[fmt.Sprintf("%T/%#v", it.Key().Interface(), it.Key().Interface())] = it.Value()
		}

		for it := a.MapRange(); it.Next(); {
			bv, ok := bm[fmt.Sprintf("%T/%#v", it.Key().Interface(), it.Key().Interface())]
			if !ok || !equalNaN(it.Value(), bv) {
				return false
			}
		}

		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				if a.Type().PkgPath() == reflect.TypeFor[configs.Config]().PkgPath() {
					// A config's own unexported fields (what was
					// written, folding's findings) follow from the
					// exported ones.
					continue
				}

				// time.Time and the like: compare as a whole.
				return reflect.DeepEqual(a.Interface(), b.Interface())
			}

			if !equalNaN(a.Field(i), b.Field(i)) {
				return false
			}
		}

		return true
	default:
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
}
