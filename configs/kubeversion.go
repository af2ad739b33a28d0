package configs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/internal/images"
)

// KubeVersion is a Kubernetes release as the components' image tags name
// it ("v1.34.12", "v1.34.12-custom.1").
type KubeVersion struct {
	Major, Minor, Patch int
}

func (k KubeVersion) String() string { return fmt.Sprintf("%d.%d.%d", k.Major, k.Minor, k.Patch) }

// MinorString is "1.34".
func (k KubeVersion) MinorString() string { return fmt.Sprintf("%d.%d", k.Major, k.Minor) }

// minorsAfter is how many minor releases k is newer than o (negative when
// older); majors other than 1 never occur.
func (k KubeVersion) minorsAfter(o KubeVersion) int { return k.Minor - o.Minor }

// ParseKubeVersion reads "1.34.12" or "v1.34.12", with anything after the
// patch number ("-rc.1", "+build") ignored, as semver.ParseTolerant does.
func ParseKubeVersion(s string) (KubeVersion, error) {
	orig := s
	s = strings.TrimPrefix(s, "v")

	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}

	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return KubeVersion{}, fmt.Errorf("%q is not a Kubernetes version such as v1.34.12", orig)
	}

	var n [3]int

	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || (len(p) > 1 && p[0] == '0') {
			return KubeVersion{}, fmt.Errorf("%q is not a Kubernetes version such as v1.34.12", orig)
		}

		n[i] = v
	}

	return KubeVersion{n[0], n[1], n[2]}, nil
}

// imageTag is the tag of an image reference ("" for none, or a digest
// only).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")

	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[colon+1:]
	}

	return ""
}

// KubeVersionOfImage is the Kubernetes version a component image runs,
// from its tag; a talosbox node, like Talos, refuses an image whose tag
// does not say (":latest", a digest alone): what it renders depends on it.
func KubeVersionOfImage(ref string) (KubeVersion, error) {
	tag := imageTag(ref)
	if tag == "" {
		return KubeVersion{}, fmt.Errorf("image %q has no tag: the tag must be the Kubernetes version (such as :v%s)", ref, images.Kubernetes)
	}

	v, err := ParseKubeVersion(tag)
	if err != nil {
		return KubeVersion{}, fmt.Errorf("cannot tell the Kubernetes version of image %q: its tag must be a version such as v%s", ref, images.Kubernetes)
	}

	return v, nil
}

// The Kubernetes versions talosbox runs: from the oldest minor Talos 1.11
// supports to the newest minor this build knows (images.Kubernetes), whose
// static pods, kubelet config and flag lists it renders.
var (
	minKubeVersion = KubeVersion{1, 29, 0}
	maxKubeMinor   = func() KubeVersion {
		v, err := ParseKubeVersion(images.Kubernetes)
		if err != nil {
			panic(err)
		}

		return v
	}()
)

// checkKubeSupported refuses a version talosbox cannot run.
func checkKubeSupported(v KubeVersion) error {
	switch {
	case v.Major != 1 || v.Minor < minKubeVersion.Minor:
		return fmt.Errorf("version of Kubernetes %s is too old: talosbox runs %s to %s.x", v, minKubeVersion.MinorString(), maxKubeMinor.MinorString())
	case v.Minor > maxKubeMinor.Minor:
		return fmt.Errorf("version of Kubernetes %s is too new: talosbox runs %s to %s.x", v, minKubeVersion.MinorString(), maxKubeMinor.MinorString())
	}

	return nil
}
