package configs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs/kubeflags"
	"github.com/talosbox/talosbox/configs/kubeschema"
)

// componentNames checks what the components of the version that will run
// look up by name at start and exit on when they do not find it: the
// kubelet's resource manager policies, kube-scheduler's plugins at their
// extension points, kube-controller-manager's controllers. The names come
// from the components' own code (configs/kubeschema, dumped by make
// images), and the messages are theirs.
func (v *validator) componentNames(c *Config) {
	if m := c.Machine; m != nil && m.Kubelet != nil && len(m.Kubelet.ExtraConfig) > 0 {
		if f, ver := v.kubeData(kubeflags.Kubelet); f != nil {
			v.kubeletPolicies("machine.kubelet.extraConfig", f, ver, m.Kubelet.ExtraConfig)
		}
	}

	cl := c.Cluster
	if cl == nil || !v.controlPlane() {
		return
	}

	if s := cl.Scheduler; s != nil && len(s.Config) > 0 {
		if f, ver := v.kubeData(kubeflags.Scheduler); f != nil {
			v.schedulerPlugins("cluster.scheduler.config", f, ver, s.Config)
		}
	}

	if cm := cl.ControllerManager; cm != nil {
		if list, ok := cm.ExtraArgs.Joined("controllers"), cm.ExtraArgs.Has("controllers"); ok { // repeats add up
			if f, ver := v.kubeData(kubeflags.ControllerManager); f != nil {
				v.controllers(keyPath("cluster.controllerManager.extraArgs", "controllers"), f, ver, list)
			}
		}
	}
}

// kubeData is the data of the component's version when this build has it
// (nil when the version is unknown, reported with its image, or when the
// data predates the names: an older data file judges nothing here).
func (v *validator) kubeData(component string) (*kubeschema.File, string) {
	ver, ok := v.kubeVersions[component]
	if !ok {
		return nil, ""
	}

	f := kubeschema.Of(ver.String())
	if f == nil {
		return nil, ""
	}

	return f, component + " " + f.Version
}

// refuses records what a component of a version would refuse at start, in
// its words.
func (v *validator) refuses(p, who, format string, args ...any) {
	v.errorf(p, "%s refuses it: %s", who, fmt.Sprintf(format, args...))
}

// kubeletPolicies: the CPU and memory managers' constructors refuse a
// policy they do not know ("unknown policy"), and
// ValidateKubeletConfiguration the topology manager's.
func (v *validator) kubeletPolicies(p string, f *kubeschema.File, who string, cfg Unstructured) {
	for _, field := range sortedKeys(f.KubeletPolicies) {
		known := f.KubeletPolicies[field]

		name, ok := cfg[field].(string)
		if !ok || name == "" || slices.Contains(known, name) {
			continue // absent, defaulted, or a type error reported with the schema
		}

		fp := p + "." + field
		hint := fmt.Sprintf(" (it knows %s)", strings.Join(known, ", "))

		switch field {
		case "cpuManagerPolicy":
			v.refuses(fp, who, "unknown policy: \"%s\"%s", name, hint)
		case "memoryManagerPolicy":
			v.refuses(fp, who, "unknown policy: %q%s", name, hint)
		default:
			flag := map[string]string{"topologyManagerPolicy": "topology-manager-policy", "topologyManagerScope": "topology-manager-scope"}[field]
			v.refuses(fp, who, "invalid configuration: %s (--%s) %q must be one of: %q", field, flag, name, known)
		}
	}
}

// schedulerExtensionPoints are the framework's extension points by their
// config names, with the plugin interface its messages name.
var schedulerExtensionPoints = []struct{ field, iface string }{
	{"preEnqueue", "PreEnqueuePlugin"}, {"queueSort", "QueueSortPlugin"}, {"preFilter", "PreFilterPlugin"},
	{"filter", "FilterPlugin"}, {"postFilter", "PostFilterPlugin"}, {"preScore", "PreScorePlugin"},
	{"score", "ScorePlugin"}, {"reserve", "ReservePlugin"}, {"permit", "PermitPlugin"},
	{"preBind", "PreBindPlugin"}, {"bind", "BindPlugin"}, {"postBind", "PostBindPlugin"},
	// The framework expands multiPoint onto every point in its own order,
	// PreFilter first: an unknown name fails there.
	{"multiPoint", "PreFilterPlugin"},
}

// schedulerPlugins: the framework kube-scheduler builds for each profile
// at start refuses an enabled plugin its registry does not have, and one
// enabled at an extension point it does not extend. (A disabled name it
// does not have is ignored, as the framework ignores it.)
func (v *validator) schedulerPlugins(p string, f *kubeschema.File, who string, cfg Unstructured) {
	if len(f.SchedulerPlugins) == 0 {
		return
	}

	profiles, _ := cfg["profiles"].([]any)

	for i, prof := range profiles {
		pp := indexPath(p+".profiles", i) + ".plugins"

		m, _ := prof.(map[string]any)
		plugins, _ := m["plugins"].(map[string]any)

		for _, ep := range schedulerExtensionPoints {
			set, _ := plugins[ep.field].(map[string]any)
			enabled, _ := set["enabled"].([]any)

			for j, e := range enabled {
				pm, _ := e.(map[string]any)

				name, ok := pm["name"].(string)
				if !ok {
					continue // a type error, reported with the schema
				}

				np := indexPath(pp+"."+ep.field+".enabled", j) + ".name"

				points, known := f.SchedulerPlugins[name]

				switch {
				case !known:
					msg := fmt.Sprintf("%s %q does not exist", ep.iface, name)
					if s := suggest(name, sortedKeys(f.SchedulerPlugins)); s != "" {
						msg += fmt.Sprintf(" (did you mean %q?)", s)
					}

					v.refuses(np, who, "%s", msg)
				case ep.field != "multiPoint" && !slices.Contains(points, ep.field):
					v.refuses(np, who, "plugin %q does not extend %s plugin (it is a %s plugin)", name, ep.iface, strings.Join(points, ", "))
				}
			}
		}
	}
}

// controllers: kube-controller-manager's option validation refuses a
// --controllers entry that is not one of its controllers or an alias of
// one ("*" and "-name" aside).
func (v *validator) controllers(p string, f *kubeschema.File, who, list string) {
	cs := f.Controllers
	if len(cs.Known) == 0 {
		return
	}

	for entry := range strings.SplitSeq(list, ",") {
		if entry == "*" {
			continue
		}

		name := strings.TrimPrefix(entry, "-")

		canonical := name
		if c, ok := cs.Aliases[name]; ok {
			canonical = c
		}

		if slices.Contains(cs.Known, canonical) {
			continue
		}

		msg := fmt.Sprintf("%q is not in the list of known controllers", name)
		if s := suggest(name, append(slices.Clone(cs.Known), sortedKeys(cs.Aliases)...)); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}

		v.refuses(p, who, "%s", msg)
	}
}
