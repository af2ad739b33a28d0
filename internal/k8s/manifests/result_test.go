package manifests

import (
	"reflect"
	"testing"
)

func TestResultMerge(t *testing.T) {
	t.Parallel()

	first := Result{
		Applied: []string{"00-a"},
		Created: []string{"ConfigMap default/a", "ConfigMap default/b"},
		Updated: []string{"ConfigMap default/c"},
		Kept:    []string{"ConfigMap default/old"},
	}
	retry := Result{
		Applied:   []string{"00-a", "99-b"},
		Created:   []string{"Widget default/w"},
		Unchanged: []string{"ConfigMap default/a", "ConfigMap default/b", "ConfigMap default/c", "ConfigMap default/d"},
		Pruned:    []string{"ConfigMap default/old"},
	}

	want := Result{
		Applied:   []string{"00-a", "99-b"},
		Created:   []string{"ConfigMap default/a", "ConfigMap default/b", "Widget default/w"},
		Updated:   []string{"ConfigMap default/c"},
		Unchanged: []string{"ConfigMap default/d"},
		Pruned:    []string{"ConfigMap default/old"},
	}

	if got := first.Merge(retry); !reflect.DeepEqual(got, want) {
		t.Errorf("merge:\n got  %+v\n want %+v", got, want)
	}

	if got := (Result{}).Merge(retry); !reflect.DeepEqual(got, retry) {
		t.Errorf("merge into nothing:\n got  %+v\n want %+v", got, retry)
	}
}
