package configs

import (
	"strings"

	"github.com/talosbox/talosbox/internal/levenshtein"
)

// suggest returns the known field a misspelt one most likely meant: same
// letters in another case, or one or two edits away for longer names.
func suggest(name string, known []string) string {
	limit := 1
	if len(name) > 5 {
		limit = 2
	}

	best, bestDist := "", limit+1

	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}

		// A word cut short, run on or qualified ("warn" for "warnings",
		// "keySlot" for "slot") is farther than two edits but plainly meant.
		if lk, ln := strings.ToLower(k), strings.ToLower(name); len(ln) >= 4 && len(lk) >= 4 && best == "" &&
			(strings.HasPrefix(lk, ln) || strings.HasPrefix(ln, lk) || strings.HasSuffix(ln, lk)) {
			best, bestDist = k, limit
		}

		if d := levenshtein.Distance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}

	return best
}
