package deepcopy_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/deepcopy"
)

type inner struct {
	Tags []string
	M    map[string]*int
}

type outer struct {
	Name   string
	Ptr    *inner
	Any    any
	Arr    [2][]byte
	hidden []int
}

func TestValueSharesNothing(t *testing.T) {
	one := 1
	src := outer{
		Name:   "a",
		Ptr:    &inner{Tags: []string{"x"}, M: map[string]*int{"k": &one}},
		Any:    []string{"in-any"},
		Arr:    [2][]byte{[]byte("b")},
		hidden: []int{7},
	}

	var dst outer

	deepcopy.Value(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(src), nil)

	if !reflect.DeepEqual(dst, src) {
		t.Fatalf("copy differs: %+v", dst)
	}

	src.Ptr.Tags[0] = "changed"
	*src.Ptr.M["k"] = 2
	src.Any.([]string)[0] = "changed"
	src.Arr[0][0] = 'z'

	if dst.Ptr.Tags[0] != "x" || *dst.Ptr.M["k"] != 1 || dst.Any.([]string)[0] != "in-any" || dst.Arr[0][0] != 'b' {
		t.Fatalf("copy shares memory with the source: %+v", dst)
	}
}

func TestValueRewritesStrings(t *testing.T) {
	src := map[string][]string{"key": {"v1", "v2"}}

	var dst map[string][]string

	deepcopy.Value(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(src), strings.ToUpper)

	if !reflect.DeepEqual(dst, map[string][]string{"KEY": {"V1", "V2"}}) {
		t.Fatalf("got %v", dst)
	}
}
