package configs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The syntax and limits of Kubernetes label, annotation and taint keys and
// values, as k8s.io/apimachinery's validation (and Talos's labels package)
// has them.
const (
	qualifiedNameMaxLength = 63
	labelValueMaxLength    = 63
	dnsSubdomainMaxLength  = 253
	// TotalAnnotationSizeLimit is the API server's limit on a node's
	// annotations, keys and values together.
	totalAnnotationSizeLimit = 256 << 10
)

var (
	qualifiedName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	})
	dnsSubdomain = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
)

// reservedAnnotations are the ones talosbox keeps on the node itself to
// know which labels, annotations and taints it owns, as Talos does.
var reservedAnnotations = []string{"talos.dev/owned-annotations", "talos.dev/owned-labels", "talos.dev/owned-taints"}

// taintEffects are the effects a taint may have.
var taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// checkQualifiedName checks a label, annotation or taint key:
// [DNS subdomain prefix/]name.
func checkQualifiedName(k string) error {
	parts := strings.Split(k, "/")

	var name string

	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		prefix := parts[0]
		name = parts[1]

		switch {
		case prefix == "":
			return fmt.Errorf("invalid key %q: the prefix before / is empty", k)
		case len(prefix) > dnsSubdomainMaxLength:
			return fmt.Errorf("invalid key %q: the prefix is longer than %d characters", k, dnsSubdomainMaxLength)
		case !dnsSubdomain().MatchString(prefix):
			return fmt.Errorf("invalid key %q: the prefix %q must be a lowercase DNS subdomain (a-z, 0-9, '-' and '.')", k, prefix)
		}
	default:
		return fmt.Errorf("invalid key %q: at most one / (prefix/name)", k)
	}

	switch {
	case name == "":
		return fmt.Errorf("invalid key %q: the name is empty", k)
	case len(name) > qualifiedNameMaxLength:
		return fmt.Errorf("invalid key %q: the name is %d characters, the limit is %d", k, len(name), qualifiedNameMaxLength)
	case !qualifiedName().MatchString(name):
		return fmt.Errorf("invalid key %q: the name must start and end with a letter or digit, with only letters, digits, '-', '_' and '.' between", k)
	}

	return nil
}

// checkLabelValue checks a label value (also a taint's value).
func checkLabelValue(val string) error {
	switch {
	case len(val) > labelValueMaxLength:
		return fmt.Errorf("invalid value %q: %d characters, the limit is %d", truncate(val, 70), len(val), labelValueMaxLength)
	case val != "" && !qualifiedName().MatchString(val):
		return fmt.Errorf("invalid value %q: a label value must be empty or start and end with a letter or digit, with only letters, digits, '-', '_' and '.' between", val)
	}

	return nil
}

// ParseTaint splits a nodeTaints value as Talos does: "value:effect", or
// "effect" alone.
func ParseTaint(s string) (value, effect string) {
	value, effect, found := strings.Cut(s, ":")
	if !found {
		return "", value
	}

	return value, effect
}

func (v *validator) kubernetesMetadata(m *MachineConfig) {
	for _, k := range sortedKeys(m.NodeLabels) {
		kp := keyPath("machine.nodeLabels", k)
		v.check(kp, checkQualifiedName(k))
		v.check(kp, checkLabelValue(m.NodeLabels[k]))
	}

	size := 0

	for _, k := range sortedKeys(m.NodeAnnotations) {
		kp := keyPath("machine.nodeAnnotations", k)
		v.check(kp, checkQualifiedName(k))

		if slices.Contains(reservedAnnotations, k) {
			v.errorf(kp, "annotation %q is reserved: talosbox keeps it to track what it owns on the node", k)
		}

		size += len(k) + len(m.NodeAnnotations[k])
	}

	if size > totalAnnotationSizeLimit {
		v.errorf("machine.nodeAnnotations", "the annotations total %d bytes, over the limit of %d bytes (256 KiB) the API server allows a node", size, totalAnnotationSizeLimit)
	}

	for _, k := range sortedKeys(m.NodeTaints) {
		kp := keyPath("machine.nodeTaints", k)
		if err := checkQualifiedName(k); err != nil {
			v.errorf(kp, "%v", err)

			continue
		}

		val, effect := ParseTaint(m.NodeTaints[k])

		if !slices.Contains(taintEffects, effect) {
			v.errorf(kp, "invalid taint %q: the effect %q must be NoSchedule, PreferNoSchedule or NoExecute (write [value:]effect)", m.NodeTaints[k], effect)

			continue
		}

		v.check(kp, checkLabelValue(val))
	}
}
