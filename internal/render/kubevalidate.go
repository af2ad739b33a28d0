package render

import (
	"context"
	"maps"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/kubevalidate"
	"github.com/talosbox/talosbox/internal/constants"
	k8srender "github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// kubeValidate runs the components' own validation, of the version each
// will run, on what this render wrote for them: the kubelet's config file
// (talosbox's settings with machine.kubelet.extraConfig), the scheduler's
// (cluster.scheduler.config), the controller-manager's extraArgs. Only
// what the config sets is asked about, and only where the Kubernetes
// binary of that version is at hand: on a node, in the component's image
// when the node has it (Options.KubeBinaries: a config that is not
// validated so gets a warning that says why); elsewhere in the image cache
// of a machine that built the images (kubevalidate.Find), and without one
// configs' own checks from the per-version data are what there is.
func (b *builder) kubeValidate() {
	type part struct {
		component, image string
		path             string // the config's, for a warning
		req              kubevalidate.Request
	}

	var parts []part

	if k := b.cfg.Machine.Kubelet; k != nil && len(k.ExtraConfig) > 0 {
		// The kubelet's config file as b.kubelet renders it (Check keeps
		// no artifacts to read it back from).
		spec, err := k8srender.KubeletSpecFor(b.cfg, k8srender.KubeletInputs{
			Nodename: strings.ToLower(b.node.hostname), StaticPodURL: StaticPodURL,
			InContainer: b.opts.Mode == configs.ModeContainer,
		})
		if err == nil {
			parts = append(parts, part{"kubelet", spec.Image, "machine.kubelet.extraConfig", kubevalidate.Request{Kubelet: &kubevalidate.Kubelet{
				Config: spec.Config, Fields: slices.Sorted(maps.Keys(k.ExtraConfig)),
			}}})
		}
	}

	if cl := b.cfg.Cluster; cl != nil && b.cfg.IsControlPlane() {
		specs, err := k8srender.ComponentConfigs(b.cfg)
		if err != nil {
			return // reported by the control plane's render
		}

		if s := cl.Scheduler; s != nil && len(s.Config) > 0 {
			if doc := schedulerConfig(b.cfg); doc != nil {
				parts = append(parts, part{"kube-scheduler", specs[k8s.SchedulerID].Image, "cluster.scheduler.config", kubevalidate.Request{Scheduler: &kubevalidate.Scheduler{
					Config: doc, FeatureGates: s.ExtraArgs.Joined("feature-gates"), // repeats add up
				}}})
			}
		}

		if cm := cl.ControllerManager; cm != nil && len(cm.ExtraArgs) > 0 {
			var args []string
			for _, k := range cm.ExtraArgs.Names() {
				for _, v := range cm.ExtraArgs.Values(k) {
					args = append(args, "--"+k+"="+v)
				}
			}

			parts = append(parts, part{"kube-controller-manager", specs[k8s.ControllerManagerID].Image, "cluster.controllerManager.extraArgs",
				kubevalidate.Request{ControllerManager: &kubevalidate.ControllerManager{Args: args}}})
		}
	}

	for _, p := range parts {
		ver, err := configs.KubeVersionOfImage(p.image)
		if err != nil {
			continue // reported with the image
		}

		ans, err := b.kubeRun(p.image, ver.String(), &p.req)
		if err != nil {
			// Only a node says so: elsewhere the image cache is an
			// extra, and its absence is the usual case.
			if b.opts.KubeBinaries != nil {
				b.warn(p.path, "not validated by %s %s itself: %v", p.component, ver, err)
			}

			continue
		}

		who := p.component + " " + ans.Version

		for _, prob := range ans.Kubelet {
			b.fail(fieldPath("machine.kubelet.extraConfig", prob.Field), "%s refuses it: %s", who, prob.Msg)
		}

		for _, prob := range ans.Scheduler {
			b.fail(fieldPath("cluster.scheduler.config", prob.Field), "%s refuses it: %s", who, prob.Msg)
		}

		for _, prob := range ans.ControllerManager {
			p := "cluster.controllerManager.extraArgs"
			if prob.Field != "" {
				p += `["` + prob.Field + `"]`
			}

			b.fail(p, "%s refuses it: %s", who, prob.Msg)
		}
	}
}

// kubeRun runs the validator of the component of image, version ver, on
// req: the node's (Options.KubeBinaries) or the image cache's.
func (b *builder) kubeRun(image, ver string, req *kubevalidate.Request) (*kubevalidate.Answer, error) {
	ctx := context.Background()

	var (
		bin string
		err error
	)

	if b.opts.KubeBinaries != nil {
		bin, err = b.opts.KubeBinaries(ctx, image)
	} else {
		bin, err = kubevalidate.Find(ver)
	}

	if err != nil {
		return nil, err
	}

	// A binary from before kube-config-validate existed, or one that
	// failed: the config is not the one at fault.
	return kubevalidate.Run(ctx, bin, req)
}

// fieldPath joins a component's field path to the config path of its
// document.
func fieldPath(base, field string) string {
	switch {
	case field == "":
		return base
	case strings.HasPrefix(field, "["):
		return base + field
	default:
		return base + "." + field
	}
}

// schedulerConfig is the scheduler's config file as the control plane's
// render writes it, decoded; nil when it cannot be made (reported there).
func schedulerConfig(cfg *configs.Config) map[string]any {
	files, err := k8srender.ConfigFiles(cfg)
	if err != nil {
		return nil
	}

	want := path.Join(constants.ConfigDir, k8s.SchedulerID, "scheduler-config.yaml")

	for _, f := range files {
		if f.Path != want {
			continue
		}

		var doc map[string]any
		if err := yaml.Unmarshal(f.Data, &doc); err != nil {
			return nil
		}

		return doc
	}

	return nil
}
