package machine

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// livePaths are the config subtrees a running node applies without a
// reboot (Talos's list before apply modes were simplified); anything else,
// such as machine.type, machine.files or machine.env, needs a reboot.
var livePaths = []string{
	"debug",
	"cluster",
	"machine.ca",
	"machine.acceptedCAs",
	"machine.time",
	"machine.certSANs",
	"machine.install",
	"machine.network",
	"machine.sysfs",
	"machine.sysctls",
	"machine.logging",
	"machine.controlPlane",
	"machine.kubelet",
	"machine.kernel",
	"machine.registries",
	"machine.pods",
	"machine.seccompProfiles",
	"machine.nodeLabels",
	"machine.nodeAnnotations",
	"machine.nodeTaints",
	"machine.features.kubernetesTalosAPIAccess",
	"machine.features.kubePrism",
	"machine.features.hostDNS",
	"machine.features.imageCache",
	"machine.features.nodeAddressSortAlgorithm",
}

// notLive are exceptions inside live subtrees: registry credentials are
// read by the image pull path only at start.
var notLive = []string{"machine.registries.config.*.auth"}

// FieldPath is a path of mapping keys. Keys may contain dots (registry
// hosts, sysctl names), so matching works on elements, not on text.
type FieldPath []string

func (p FieldPath) String() string { return strings.Join(p, ".") }

// ChangedPaths lists the paths where two configs differ, at the deepest
// mapping level where they do (lists compare as a whole), sorted.
func ChangedPaths(oldYAML, newYAML []byte) ([]FieldPath, error) {
	var a, b any
	if err := yaml.Unmarshal(oldYAML, &a); err != nil {
		return nil, fmt.Errorf("old config: %w", err)
	}

	if err := yaml.Unmarshal(newYAML, &b); err != nil {
		return nil, fmt.Errorf("new config: %w", err)
	}

	var out []FieldPath

	diffPaths(nil, a, b, &out)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })

	return out, nil
}

func diffPaths(prefix FieldPath, a, b any, out *[]FieldPath) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)

	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, slices.Clone(prefix))
		}

		return
	}

	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}

	for k := range bm {
		keys[k] = true
	}

	for k := range keys {
		diffPaths(append(prefix, k), am[k], bm[k], out)
	}
}

// RebootRequired returns the changed paths that cannot be applied live.
func RebootRequired(changed []FieldPath) []FieldPath {
	var out []FieldPath

	for _, p := range changed {
		if !isLive(p) {
			out = append(out, p)
		}
	}

	return out
}

func isLive(path FieldPath) bool {
	for _, nl := range notLive {
		if matchPrefix(nl, path) {
			return false
		}
	}

	return slices.ContainsFunc(livePaths, func(l string) bool { return matchPrefix(l, path) })
}

// matchPrefix reports whether path is pattern or below it; "*" matches one
// path element.
func matchPrefix(pattern string, ep FieldPath) bool {
	pp := strings.Split(pattern, ".")
	if len(ep) < len(pp) {
		return false
	}

	for i, p := range pp {
		if p != "*" && p != ep[i] {
			return false
		}
	}

	return true
}
