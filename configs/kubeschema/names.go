package kubeschema

import (
	"slices"
	"strings"

	"github.com/talosbox/talosbox/internal/levenshtein"
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}

	slices.Sort(keys)

	return keys
}

// closest is the field an unknown one most likely meant: the same letters
// in another case, or a few edits away; "" when none is close.
func closest(name string, fields map[string]*Type) string {
	limit := 2
	if len(name) > 12 {
		limit = 3
	}

	best, bestDist := "", limit+1

	for _, f := range sortedKeys(fields) {
		if strings.EqualFold(f, name) {
			return f
		}

		if d := levenshtein.Distance(strings.ToLower(name), strings.ToLower(f)); d < bestDist {
			best, bestDist = f, d
		}
	}

	return best
}
