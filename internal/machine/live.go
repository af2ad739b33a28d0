package machine

import (
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
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
	// talosbox's default hostname is stable whatever this says (a
	// HostnameConfig's auto: stable folds into it).
	"machine.features.stableHostname",
	"machine.features.kubePrism",
	"machine.features.hostDNS",
	"machine.features.imageCache",
	"machine.features.nodeAddressSortAlgorithm",
}

// notLive are exceptions inside live subtrees: registry credentials are
// read by the image pull path only at start.
var notLive = []string{"machine.registries.config.*.auth"}

// RebootRequired returns the paths of the changes that cannot be applied
// live.
func RebootRequired(changes []configs.Change) []configs.Path {
	var out []configs.Path

	for _, c := range changes {
		if !isLive(c.Path) {
			out = append(out, c.Path)
		}
	}

	return out
}

func isLive(path configs.Path) bool {
	if len(path) > 0 {
		if live, isDoc := configs.DocumentChangeLive(path[0]); isDoc {
			return live
		}
	}

	for _, nl := range notLive {
		if matchPrefix(nl, path) {
			return false
		}
	}

	return slices.ContainsFunc(livePaths, func(l string) bool { return matchPrefix(l, path) })
}

// matchPrefix reports whether path is pattern or below it; "*" matches one
// path element (a key or a list index). Keys may contain dots, so the
// path is matched element by element.
func matchPrefix(pattern string, ep configs.Path) bool {
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
