//go:build e2e

package render_test

import (
	"context"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/kubevalidate"
	"github.com/talosbox/talosbox/internal/render"
)

// TestKubeValidate: render.Check runs the components' own validation, of
// the version that will run, on the files the node would write, through
// the Kubernetes binaries make images built (TALOSBOX_IMAGE_CACHE). The
// messages are the components'; each is located at the config path that
// caused it.
func TestKubeValidate(t *testing.T) {
	for _, v := range []string{"1.34.12", "1.33.13"} {
		if _, err := kubevalidate.Find(v); err != nil {
			t.Fatalf("kubernetes %s: %v (make images K8S=all builds it)", v, err)
		}
	}

	tests := []struct {
		name      string
		kubelet   configs.Unstructured
		image     string // the kubelet's, when not the default
		scheduler configs.Unstructured
		cmArgs    map[string]string
		want      []string
	}{
		{
			name:    "an image GC threshold over 100",
			kubelet: configs.Unstructured{"imageGCHighThresholdPercent": 150},
			want:    []string{`machine.kubelet.extraConfig.imageGCHighThresholdPercent: kubelet 1.34.12 refuses it: invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 150 must be between 0 and 100, inclusive`},
		},
		{
			name:    "a low threshold over the kubelet's default high one",
			kubelet: configs.Unstructured{"imageGCLowThresholdPercent": 90},
			want:    []string{`machine.kubelet.extraConfig.imageGCLowThresholdPercent: kubelet 1.34.12 refuses it: invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85`},
		},
		{
			name: "kubelet limits and periods",
			kubelet: configs.Unstructured{"nodeStatusMaxImages": -2, "registryPullQPS": -1, "containerLogMaxFiles": 1,
				"shutdownGracePeriod": "10s", "shutdownGracePeriodCriticalPods": "20s"},
			want: []string{
				`machine.kubelet.extraConfig.nodeStatusMaxImages: kubelet 1.34.12 refuses it: invalid configuration: nodeStatusMaxImages (--node-status-max-images) -2 must be -1 or greater`,
				`machine.kubelet.extraConfig.registryPullQPS: kubelet 1.34.12 refuses it: invalid configuration: registryPullQPS (--registry-qps) -1 must not be a negative number`,
				`machine.kubelet.extraConfig.shutdownGracePeriodCriticalPods: kubelet 1.34.12 refuses it: invalid configuration: shutdownGracePeriodCriticalPods {20s} must be <= shutdownGracePeriod {10s}`,
				`machine.kubelet.extraConfig.containerLogMaxFiles: kubelet 1.34.12 refuses it: invalid configuration: containerLogMaxFiles must be greater than 1`,
			},
		},
		{
			// 1.33's kubelet refuses a tracing config with its tracing
			// gate off; 1.34's gate is locked on (refused by configs' gate
			// check before this one runs).
			name:    "the kubelet of the configured version judges",
			image:   "ghcr.io/siderolabs/kubelet:v1.33.13",
			kubelet: configs.Unstructured{"featureGates": map[string]any{"KubeletTracing": false}, "tracing": map[string]any{"endpoint": "localhost:4317"}},
			want:    []string{`machine.kubelet.extraConfig.tracing: kubelet 1.33.13 refuses it: invalid configuration: tracing should not be configured if KubeletTracing feature flag is disabled.`},
		},
		{
			name:      "a percentage of nodes to score over 100",
			scheduler: configs.Unstructured{"percentageOfNodesToScore": 200},
			want:      []string{`cluster.scheduler.config.percentageOfNodesToScore: kube-scheduler 1.34.12 refuses it: percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]`},
		},
		{
			name: "scheduler parallelism, back-off and profiles",
			scheduler: configs.Unstructured{"parallelism": 0, "podInitialBackoffSeconds": 0,
				"profiles": []any{map[string]any{"schedulerName": "a"}, map[string]any{"schedulerName": "a"}}},
			want: []string{
				`cluster.scheduler.config.parallelism: kube-scheduler 1.34.12 refuses it: parallelism: Invalid value: 0: should be an integer value greater than zero`,
				`cluster.scheduler.config.profiles[1].schedulerName: kube-scheduler 1.34.12 refuses it: profiles[1].schedulerName: Duplicate value: {}`,
				`cluster.scheduler.config.podInitialBackoffSeconds: kube-scheduler 1.34.12 refuses it: podInitialBackoffSeconds: Invalid value: 0: must be greater than 0`,
			},
		},
		{
			// ValidateKubeSchedulerConfiguration looks NodeResourcesFit's
			// arguments up under another name and so never checks them;
			// the plugin refuses them when the scheduler builds its
			// framework.
			name: "plugin arguments the plugin refuses",
			scheduler: configs.Unstructured{"profiles": []any{map[string]any{"schedulerName": "default-scheduler", "pluginConfig": []any{
				map[string]any{"name": "NodeResourcesFit", "args": map[string]any{"scoringStrategy": map[string]any{"type": "Weird"}}},
			}}}},
			want: []string{`cluster.scheduler.config.profiles[0].pluginConfig[0].args: kube-scheduler 1.34.12 refuses it: initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": scoringStrategy.type: Unsupported value: "Weird": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"`},
		},
		{
			name:   "a leader election lock other than leases",
			cmArgs: map[string]string{"leader-elect-resource-lock": "endpoints"},
			want:   []string{`cluster.controllerManager.extraArgs["leader-elect-resource-lock"]: kube-controller-manager 1.34.12 refuses it: resourceLock value must be "leases"`},
		},
		{
			// What a rule read off the documentation, or the newest
			// release's code, would refuse, and these components accept:
			// parallel image pulls need serializeImagePulls: false, which
			// talosbox's kubelet config sets (the kubelet's default is
			// true); a memoryThrottlingFactor without MemoryQoS, which
			// 1.34 ignores and Kubernetes 1.37's validation refuses; a
			// threshold pair the kubelet's default would break, moved
			// together.
			name: "what the components accept",
			kubelet: configs.Unstructured{"maxParallelImagePulls": 5, "memoryThrottlingFactor": 0.8,
				"imageGCHighThresholdPercent": 95, "imageGCLowThresholdPercent": 90},
			scheduler: configs.Unstructured{"percentageOfNodesToScore": 0, "profiles": []any{map[string]any{"schedulerName": "default-scheduler",
				"plugins": map[string]any{"score": map[string]any{"disabled": []any{map[string]any{"name": "*"}}}}}}},
			cmArgs: map[string]string{"controllers": "*,-bootstrapsigner", "leader-elect-resource-lock": "leases"},
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cp, _ := gen(t)

			if tc.kubelet != nil {
				cp.Machine.Kubelet.ExtraConfig = tc.kubelet
			}

			if tc.image != "" {
				cp.Machine.Kubelet.Image = tc.image
			}

			if tc.scheduler != nil {
				cp.Cluster.Scheduler = &configs.SchedulerConfig{Config: tc.scheduler}
			}

			if tc.cmArgs != nil {
				cp.Cluster.ControllerManager = &configs.ControllerManager{ExtraArgs: configs.ArgsOf(tc.cmArgs)}
			}

			var got []string

			if err := render.Check(cp, configs.ModeContainer); err != nil {
				for _, e := range err.(*configs.Errors).List { //nolint:errorlint,forcetypeassert // Check returns *Errors itself
					got = append(got, e.Error())
				}
			}

			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestKubeValidateOnNodeRefuses: a node's validation (LoadOn with its
// finder, here handing out the image cache's binary of the image's
// version, as the node's finds the same build in the image) refuses what
// the component refuses, by line, in the component's words.
func TestKubeValidateOnNodeRefuses(t *testing.T) {
	_, worker := gen(t)

	data, err := worker.Edit(func(v1 *configs.Config) {
		v1.Machine.Kubelet.ExtraConfig = configs.Unstructured{"imageGCHighThresholdPercent": 150}
	}).Encode()
	if err != nil {
		t.Fatal(err)
	}

	var asked []string

	find := func(_ context.Context, image string) (string, error) {
		asked = append(asked, image)

		v, err := configs.KubeVersionOfImage(image)
		if err != nil {
			return "", err
		}

		return kubevalidate.Find(v.String())
	}

	_, _, err = render.LoadOn(data, configs.ModeContainer, render.WithKubeBinaries(find))

	want := regexp.MustCompile(`line \d+: machine\.kubelet\.extraConfig\.imageGCHighThresholdPercent: kubelet 1\.34\.12 refuses it: invalid configuration: imageGCHighThresholdPercent \(--image-gc-high-threshold\) 150 must be between 0 and 100, inclusive`)
	if err == nil || !want.MatchString(err.Error()) {
		t.Errorf("got %v, want %s", err, want)
	}

	if !reflect.DeepEqual(asked, []string{"ghcr.io/siderolabs/kubelet:v1.34.12"}) {
		t.Errorf("asked for %q", asked)
	}
}
