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

// argSet is a component's flags, rendered sorted by key.
type argSet map[string]string

// merge folds the user's extra args in under policies; a denied flag is
// an error naming the config path.
func (a argSet) merge(extra map[string]string, policies map[string]argPolicy, path string) error {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		v := extra[k]

		switch policies[k] {
		case argDenied:
			return fmt.Errorf("%s: extra arg %q is not allowed: talosbox sets it", path, k)
		case argAdditive:
			if cur, ok := a[k]; ok && cur != "" {
				parts := strings.Split(cur, ",")

				for _, p := range strings.Split(v, ",") {
					if p != "" && !slices.Contains(parts, p) {
						parts = append(parts, p)
					}
				}

				a[k] = strings.Join(parts, ",")

				continue
			}

			a[k] = v
		default:
			a[k] = v
		}
	}

	return nil
}

// args renders "--key=value" sorted by key.
func (a argSet) args() []string {
	out := make([]string, 0, len(a))

	for _, k := range slices.Sorted(maps.Keys(a)) {
		out = append(out, "--"+k+"="+a[k])
	}

	return out
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
