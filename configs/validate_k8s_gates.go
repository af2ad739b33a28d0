package configs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/configs/kubeschema"
	"github.com/talosbox/talosbox/internal/levenshtein"
)

// featureGateFlag checks a component's --feature-gates value: the
// component exits on a gate it does not know, or on a locked gate set to
// the other value. Since Kubernetes 1.34 a gate may be qualified with the
// component it is for ("kube:Gate=true"); only unqualified and kube: gates
// are this build's to judge.
func (v *validator) featureGateFlag(p, component string, ver KubeVersion, value string) {
	gates := map[string]bool{}

	for entry := range strings.SplitSeq(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}

		k, val, ok := strings.Cut(entry, "=")
		if !ok {
			v.errorf(p, "feature gate %q has no value: write %s=true or %s=false", entry, entry, entry)

			continue
		}

		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			v.errorf(p, "feature gate %s=%s: want true or false", k, val)

			continue
		}

		if owner, name, qualified := strings.Cut(k, ":"); qualified {
			if owner != "kube" {
				continue
			}

			k = name
		}

		gates[strings.TrimSpace(k)] = b
	}

	v.featureGates(p, component, ver, gates)
}

// featureGates checks gates by name against the ones the component of
// that version knows (configs/kubeschema, dumped from the build).
func (v *validator) featureGates(p, component string, ver KubeVersion, gates map[string]bool) {
	known, from := kubeschema.Gates(ver.String())
	if known == nil {
		return // no list for that version: the component judges
	}

	for _, name := range sortedKeys(gates) {
		g, ok := known[name]

		switch {
		case !ok:
			v.errorf(p, "%s %s has no feature gate %q: it would refuse to start%s", component, from, name, gateHint(name, known))
		case g.LockToDefault && gates[name] != g.Default:
			v.errorf(p, "feature gate %s is locked to %t in %s %s: it would refuse to start with %t", name, g.Default, component, from, gates[name])
		}
	}
}

func gateHint(name string, known map[string]kubeschema.Gate) string {
	best, bestDist := "", 4

	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range known {
			if !yield(k) {
				return
			}
		}
	}) {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}

		if d := levenshtein.Distance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}

	if best == "" {
		return ""
	}

	return fmt.Sprintf(" (did you mean %q?)", best)
}
