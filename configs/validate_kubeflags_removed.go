package configs

import (
	"fmt"

	"github.com/talosbox/talosbox/configs/kubeflags"
)

// removedFlag is a flag a Kubernetes component had in an earlier minor and
// no longer has: configs/kubeflags lists only what the versions talosbox
// runs accept, so without this a config carried over from an older cluster
// gets "has no flag" where "was removed" says what happened.
type removedFlag struct {
	minor int    // the first minor without it: 1.<minor>
	pr    string // the kubernetes/kubernetes pull request that removed it
}

// removedKubeFlags are flags removed from the components in the minors
// before the ones talosbox runs, by component and flag. From the pull
// requests that removed them, whose release notes are in
// kubernetes/kubernetes CHANGELOG/CHANGELOG-1.<minor>.md:
//   - #106907 (1.24): the dockershim's flags, removed with it;
//   - #112120 (1.26): the klog flags (KEP-2845), from every component;
//   - #114017 (1.27): --container-runtime, whose only value was "remote";
//   - #122082 (1.31): --keep-terminated-pod-volumes, deprecated since 1.8.
//
// The test checks that none of them is in configs/kubeflags' data.
var removedKubeFlags = map[string]map[string]removedFlag{
	kubeflags.Kubelet: withFlags(map[string]removedFlag{
		"experimental-dockershim-root-directory": {24, "106907"},
		"docker-endpoint":                        {24, "106907"},
		"image-pull-progress-deadline":           {24, "106907"},
		"network-plugin":                         {24, "106907"},
		"network-plugin-mtu":                     {24, "106907"},
		"cni-conf-dir":                           {24, "106907"},
		"cni-bin-dir":                            {24, "106907"},
		"cni-cache-dir":                          {24, "106907"},
		"container-runtime":                      {27, "114017"},
		"keep-terminated-pod-volumes":            {31, "122082"},
	}, klogFlags),
	kubeflags.APIServer:         klogFlags,
	kubeflags.ControllerManager: klogFlags,
	kubeflags.Scheduler:         klogFlags,
	kubeflags.Proxy:             klogFlags,
}

// klogFlags were removed from every component in 1.26 (#112120); only -v
// and --vmodule remain.
var klogFlags = map[string]removedFlag{
	"log-dir": {26, "112120"}, "log-file": {26, "112120"}, "log-file-max-size": {26, "112120"},
	"logtostderr": {26, "112120"}, "alsologtostderr": {26, "112120"}, "one-output": {26, "112120"},
	"stderrthreshold": {26, "112120"}, "skip-headers": {26, "112120"}, "skip-log-headers": {26, "112120"},
	"add-dir-header": {26, "112120"}, "log-backtrace-at": {26, "112120"},
}

func withFlags(maps ...map[string]removedFlag) map[string]removedFlag {
	out := map[string]removedFlag{}

	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}

	return out
}

// removedFlagNote says when a flag the component of version ver does not
// have was removed, or "" when it is not known to have been.
func removedFlagNote(component string, ver KubeVersion, flag string) string {
	r, ok := removedKubeFlags[component][flag]
	if !ok || ver.Major != 1 || ver.Minor < r.minor {
		return ""
	}

	return fmt.Sprintf("flag --%s was removed in Kubernetes 1.%d (kubernetes/kubernetes#%s)", flag, r.minor, r.pr)
}
