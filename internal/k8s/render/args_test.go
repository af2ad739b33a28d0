package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// TestArgSetMerge: extra args over a component's defaults, as Talos's
// argument builder merges them: a value replaces the default whole, a
// list repeats the flag in order, an empty list leaves it out; additive
// flags take the items of every value into their one value; denied flags
// are refused whatever their form.
func TestArgSetMerge(t *testing.T) {
	t.Parallel()

	defaults := argSet{"add": "a,b", "keep": "k", "over": "o"}
	pol := policies([]string{"add", "new-add"}, []string{"deny"})

	for _, tc := range []struct {
		name  string
		extra configs.Args
		want  []string
		err   string
	}{
		{"no extra args", nil, []string{"--add=a,b", "--keep=k", "--over=o"}, ""},
		{"a string replaces", configs.Args{"over": configs.ArgString("x")}, []string{"--add=a,b", "--keep=k", "--over=x"}, ""},
		{"a list repeats in order", configs.Args{"over": configs.ArgList("z", "x", "z")},
			[]string{"--add=a,b", "--keep=k", "--over=z", "--over=x", "--over=z"}, ""},
		{"a new flag, repeated", configs.Args{"new": configs.ArgList("1", "2")},
			[]string{"--add=a,b", "--keep=k", "--new=1", "--new=2", "--over=o"}, ""},
		{"an empty list drops the default", configs.Args{"over": configs.ArgList()}, []string{"--add=a,b", "--keep=k"}, ""},
		{"additive: a list's items after the default's, once", configs.Args{"add": configs.ArgList("c,b", "a", "d")},
			[]string{"--add=a,b,c,d", "--keep=k", "--over=o"}, ""},
		{"additive without a default: one value", configs.Args{"new-add": configs.ArgList("x", "y")},
			[]string{"--add=a,b", "--keep=k", "--new-add=x,y", "--over=o"}, ""},
		{"denied as a string", configs.Args{"deny": configs.ArgString("x")}, nil, `p: extra arg "deny" is not allowed`},
		{"denied as a list", configs.Args{"deny": configs.ArgList("x", "y")}, nil, `p: extra arg "deny" is not allowed`},
		{"denied as an empty list", configs.Args{"deny": configs.ArgList()}, nil, `p: extra arg "deny" is not allowed`},
	} {
		got, err := defaults.merge(tc.extra, pol, "p")

		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %q, %v; want an error saying %q", tc.name, got, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	if len(defaults) != 3 || defaults["over"] != "o" {
		t.Errorf("merge changed the defaults: %v", defaults)
	}
}
