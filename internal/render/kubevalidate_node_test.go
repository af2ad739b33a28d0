package render_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

// TestKubeValidateOnNode: on a node (WithKubeBinaries) each component
// config the machine config sets is handed to the validator in that
// component's image, as the config names it; a config whose component
// could not validate it is accepted with a warning that says which and
// why, and one that sets no component config asks for nothing. Without
// the node's finder (talosctl validate) a missing validator is the usual
// case and goes unsaid.
func TestKubeValidateOnNode(t *testing.T) {
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Fatal(err)
	}

	notHere := errors.New("not on this node")

	tests := []struct {
		name   string
		edit   func(v1 *configs.Config)
		worker bool
		bin    string // what the finder returns; "" is notHere
		asked  []string
		warns  []string
	}{
		{
			name:   "no component config",
			worker: true,
		},
		{
			name:   "a kubelet setting, its image not on the node",
			worker: true,
			edit: func(v1 *configs.Config) {
				v1.Machine.Kubelet.ExtraConfig = configs.Unstructured{"imageGCHighThresholdPercent": 95}
			},
			asked: []string{"ghcr.io/siderolabs/kubelet:v1.34.12"},
			warns: []string{"machine.kubelet.extraConfig: not validated by kubelet 1.34.12 itself: not on this node"},
		},
		{
			name:   "the version the config changes to",
			worker: true,
			edit: func(v1 *configs.Config) {
				v1.Machine.Kubelet.Image = "ghcr.io/siderolabs/kubelet:v1.33.13"
				v1.Machine.Kubelet.ExtraConfig = configs.Unstructured{"imageGCHighThresholdPercent": 95}
			},
			asked: []string{"ghcr.io/siderolabs/kubelet:v1.33.13"},
			warns: []string{"machine.kubelet.extraConfig: not validated by kubelet 1.33.13 itself: not on this node"},
		},
		{
			name: "the control plane's components, each in its image",
			edit: func(v1 *configs.Config) {
				v1.Cluster.Scheduler = &configs.SchedulerConfig{Config: configs.Unstructured{"percentageOfNodesToScore": 50}}
				v1.Cluster.ControllerManager = &configs.ControllerManager{ExtraArgs: configs.ArgsOf(map[string]string{"leader-elect-resource-lock": "leases"})}
			},
			asked: []string{"registry.k8s.io/kube-scheduler:v1.34.12", "registry.k8s.io/kube-controller-manager:v1.34.12"},
			warns: []string{
				"cluster.scheduler.config: not validated by kube-scheduler 1.34.12 itself: not on this node",
				"cluster.controllerManager.extraArgs: not validated by kube-controller-manager 1.34.12 itself: not on this node",
			},
		},
		{
			// A binary that fails is not the config's fault.
			name:   "a validator that fails",
			worker: true,
			bin:    falseBin,
			edit: func(v1 *configs.Config) {
				v1.Machine.Kubelet.ExtraConfig = configs.Unstructured{"imageGCHighThresholdPercent": 95}
			},
			asked: []string{"ghcr.io/siderolabs/kubelet:v1.34.12"},
			warns: []string{fmt.Sprintf("machine.kubelet.extraConfig: not validated by kubelet 1.34.12 itself: kube-config-validate (%s): exit status 1: ", falseBin)},
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cp, worker := gen(t)

			cfg := cp
			if tc.worker {
				cfg = worker
			}

			if tc.edit != nil {
				cfg = cfg.Edit(tc.edit)
			}

			data, err := cfg.Encode()
			if err != nil {
				t.Fatal(err)
			}

			var asked []string

			find := func(_ context.Context, image string) (string, error) {
				asked = append(asked, image)

				if tc.bin != "" {
					return tc.bin, nil
				}

				return "", notHere
			}

			_, warns, err := render.LoadOn(data, configs.ModeContainer, render.WithKubeBinaries(find))
			if err != nil {
				t.Fatal(err)
			}

			if !reflect.DeepEqual(asked, tc.asked) {
				t.Errorf("asked for %q, want %q", asked, tc.asked)
			}

			warns = slices.DeleteFunc(warns, func(w string) bool { return !strings.Contains(w, "not validated by") })
			if !reflect.DeepEqual(warns, tc.warns) {
				t.Errorf("warnings\n  %s\nwant\n  %s", strings.Join(warns, "\n  "), strings.Join(tc.warns, "\n  "))
			}

			// talosctl validate without an image cache: nothing said.
			t.Setenv("TALOSBOX_IMAGE_CACHE", t.TempDir())

			_, warns, err = render.LoadOn(data, configs.ModeContainer)
			if err != nil || slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, "not validated by") }) {
				t.Errorf("without the node's finder: %q, %v", warns, err)
			}
		})
	}
}
