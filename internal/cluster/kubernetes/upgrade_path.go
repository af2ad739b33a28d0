package kubernetes

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/internal/images"
)

// kubeVersion is a parsed MAJOR.MINOR.PATCH.
type kubeVersion struct{ major, minor, patch int }

func parseKubeVersion(s string) (kubeVersion, error) {
	c, err := images.CanonicalKubernetes(s)
	if err != nil {
		return kubeVersion{}, err
	}

	var v kubeVersion

	parts := strings.Split(c, ".")
	for i, p := range []*int{&v.major, &v.minor, &v.patch} {
		*p, _ = strconv.Atoi(parts[i]) // the pattern allows digits only
	}

	return v, nil
}

func (v kubeVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

func (v kubeVersion) compare(o kubeVersion) int {
	for _, d := range []int{v.major - o.major, v.minor - o.minor, v.patch - o.patch} {
		if d != 0 {
			return d
		}
	}

	return 0
}

// checkUpgradePath refuses what Talos's upgrade path refuses: another
// major, a skipped minor, or a lower minor (a rollback is a config change,
// not an upgrade). A patch release up or down within a minor is allowed.
func checkUpgradePath(from, to string) error {
	f, err := parseKubeVersion(from)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}

	t, err := parseKubeVersion(to)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}

	if f.major == t.major && (t.minor == f.minor || t.minor == f.minor+1) {
		return nil
	}

	return fmt.Errorf("unsupported upgrade path %s -> %s: upgrade-k8s moves at most one minor version up (%d.%d -> %d.%d); "+
		"go through each minor in turn, or roll back by applying the previous machine config", f, t, f.major, f.minor, f.major, f.minor+1)
}

// checkSupportedVersion is the Talos-version compatibility check: a node
// runs the Kubernetes minors talosbox renders and builds images for.
func checkSupportedVersion(to string) error {
	t, err := parseKubeVersion(to)
	if err != nil {
		return err
	}

	var minors []string

	for _, v := range images.KubernetesVersions() {
		s, _ := parseKubeVersion(v)
		if s.major == t.major && s.minor == t.minor {
			return nil
		}

		minors = append(minors, fmt.Sprintf("%d.%d", s.major, s.minor))
	}

	slices.Sort(minors)

	return fmt.Errorf("kubernetes %s is not supported by this talosbox: it runs Kubernetes %s", t, strings.Join(minors, " and "))
}

// imageTagVersion is the version in an image's tag, "" without one
// ("registry.k8s.io/kube-apiserver:v1.34.12" → "1.34.12").
func imageTagVersion(image string) string {
	slash := strings.LastIndexByte(image, '/')

	i := strings.LastIndexByte(image, ':')
	if i <= slash {
		return ""
	}

	v, err := images.CanonicalKubernetes(image[i+1:])
	if err != nil {
		return ""
	}

	return v
}

// ImageRepository is an image reference without its tag.
func ImageRepository(image string) string {
	slash := strings.LastIndexByte(image, '/')
	if i := strings.LastIndexByte(image, ':'); i > slash {
		return image[:i]
	}

	return image
}

// lowestVersion is the lowest of the versions, skipping empty ones.
func lowestVersion(versions []string) (string, error) {
	var low *kubeVersion

	for _, s := range versions {
		if s == "" {
			continue
		}

		v, err := parseKubeVersion(s)
		if err != nil {
			return "", err
		}

		if low == nil || v.compare(*low) < 0 {
			low = &v
		}
	}

	if low == nil {
		return "", fmt.Errorf("no Kubernetes version found on the nodes: use --from")
	}

	return low.String(), nil
}
