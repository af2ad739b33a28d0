package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// argPolicy is how a user's extraArg meets a default flag, as Talos's
// argsbuilder has it.
type argPolicy int

const (
	argOverwrite argPolicy = iota
	argAdditive            // comma-joined union
	argDenied              // the user may not set it
)

// argSet is a component's default flags, one value each.
type argSet map[string]string

// merge is the command line: the defaults with the user's extra args
// folded in under policies (a denied flag is an error naming the config
// path), sorted by flag, a flag written once per value ("--key=value"),
// as Talos's argument builder writes them. An extra arg replaces the
// default of its name whole: a list repeats the flag in order, and an
// empty list leaves it out. An additive flag instead gets the extra
// values' comma-separated items after the default's, in one value.
func (a argSet) merge(extra configs.Args, policies map[string]argPolicy, path string) ([]string, error) {
	flags := make(map[string][]string, len(a)+len(extra))
	for k, v := range a {
		flags[k] = []string{v}
	}

	for _, k := range extra.Names() {
		values := extra.Values(k)

		switch policies[k] {
		case argDenied:
			return nil, fmt.Errorf("%s: extra arg %q is not allowed: talosbox sets it", path, k)
		case argAdditive:
			v := strings.Join(values, ",")

			if cur, ok := a[k]; ok && cur != "" {
				parts := strings.Split(cur, ",")

				for _, p := range strings.Split(v, ",") {
					if p != "" && !slices.Contains(parts, p) {
						parts = append(parts, p)
					}
				}

				v = strings.Join(parts, ",")
			}

			flags[k] = []string{v}
		default:
			flags[k] = values
		}
	}

	out := make([]string, 0, len(flags))

	for _, k := range slices.Sorted(maps.Keys(flags)) {
		for _, v := range flags[k] {
			out = append(out, "--"+k+"="+v)
		}
	}

	return out, nil
}

func policies(additive, denied []string) map[string]argPolicy {
	m := map[string]argPolicy{}

	for _, k := range additive {
		m[k] = argAdditive
	}

	for _, k := range denied {
		m[k] = argDenied
	}

	return m
}

// The flag policies of each component, as Talos sets them;
// the denied lists are validation's too, so they live with the config.
var (
	apiServerPolicies = policies(
		[]string{"enable-admission-plugins", "feature-gates", "authorization-mode", "tls-cipher-suites"},
		configs.DeniedExtraArgs["cluster.apiServer.extraArgs"],
	)
	controllerManagerPolicies = policies(
		[]string{"service-cluster-ip-range", "controllers"},
		configs.DeniedExtraArgs["cluster.controllerManager.extraArgs"],
	)
	schedulerPolicies = policies(nil, configs.DeniedExtraArgs["cluster.scheduler.extraArgs"])
	kubeletPolicies   = policies(nil, configs.DeniedExtraArgs["machine.kubelet.extraArgs"])
)
