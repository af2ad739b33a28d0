package levenshtein_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/levenshtein"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"interfaces", "interface", 1},
		{"machinestatus", "machinestatuses", 2},
		{"same", "same", 0},
	} {
		if got := levenshtein.Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
