package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// staticPod is a node's StaticPod resource, as upgrade-k8s reads it.
type staticPod struct {
	image, configVersion string
}

func readStaticPod(ctx context.Context, reach client.Reach, node, component string) (staticPod, error) {
	return client.OnNode(ctx, reach, node, func(ctx context.Context, c *client.Client) (staticPod, error) {
		resp, err := c.Resource.Get(ctx, &resource.GetRequest{Type: k8s.StaticPodType, Id: component})
		if err != nil {
			return staticPod{}, err
		}

		if err := client.MetadataError(resp.GetMetadata()); err != nil {
			return staticPod{}, err
		}

		sp, err := parseStaticPod(resp.GetResource().GetSpecYaml())
		if err != nil {
			return staticPod{}, fmt.Errorf("static pod %s: %w", component, err)
		}

		return sp, nil
	})
}

// parseStaticPod reads the image and config-version of a StaticPod spec.
func parseStaticPod(specYAML []byte) (staticPod, error) {
	type pod struct {
		Metadata struct {
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Spec struct {
			Containers []struct {
				Image string `yaml:"image"`
			} `yaml:"containers"`
		} `yaml:"spec"`
	}

	// The spec is the pod itself, as Talos shows it, or wrapped in pod:.
	var spec struct {
		pod `yaml:",inline"`
		Pod *pod `yaml:"pod"`
	}

	if err := yaml.Unmarshal(specYAML, &spec); err != nil {
		return staticPod{}, err
	}

	p := spec.pod
	if spec.Pod != nil {
		p = *spec.Pod
	}

	if len(p.Spec.Containers) == 0 {
		return staticPod{}, errors.New("no container")
	}

	return staticPod{image: p.Spec.Containers[0].Image, configVersion: p.Metadata.Annotations["talos.dev/config-version"]}, nil
}

// configImage is the image a node's config sets for a component.
func (u *k8sUpgrade) configImage(ctx context.Context, node, component string) (string, error) {
	cfg, err := u.config(ctx, node)
	if err != nil {
		return "", err
	}

	c, m := cfg.Cluster, cfg.Machine

	switch component {
	case "kube-apiserver":
		if c.APIServer != nil {
			return c.APIServer.Image, nil
		}
	case "kube-controller-manager":
		if c.ControllerManager != nil {
			return c.ControllerManager.Image, nil
		}
	case "kube-scheduler":
		if c.Scheduler != nil {
			return c.Scheduler.Image, nil
		}
	case "kube-proxy":
		if c.Proxy != nil {
			return c.Proxy.Image, nil
		}
	case "kubelet":
		if m.Kubelet != nil {
			return m.Kubelet.Image, nil
		}
	}

	return "", nil
}

var componentConfigPath = map[string]string{
	"kube-apiserver":          "cluster.apiServer.image",
	"kube-controller-manager": "cluster.controllerManager.image",
	"kube-scheduler":          "cluster.scheduler.image",
	"kube-proxy":              "cluster.proxy.image",
	"kubelet":                 "machine.kubelet.image",
}

// upgradeStaticPod moves one component on one control plane: patch the
// config, wait for the node to render the pod with the new image, then
// for the kubelet to report that pod (its config-version) Ready.
func (u *k8sUpgrade) upgradeStaticPod(ctx context.Context, component, node string) error {
	u.log(" > %q: starting update", node)

	current, err := u.configImage(ctx, node, component)
	if err != nil {
		return err
	}

	if _, err := u.patchImage(ctx, node, component, current); err != nil {
		return err
	}

	if u.o.DryRun {
		return nil
	}

	var expected string

	// The node renders the pod from the new config (immediately, unless
	// it is busy): its config-version is what the kubelet must report.
	err = u.waitFor(ctx, 5*time.Minute, "", func() error {
		sp, err := readStaticPod(ctx, u.reach, node, component)
		if err != nil {
			return err
		}

		if sp.image != u.image(component) {
			return fmt.Errorf("static pod still has image %s", sp.image)
		}

		expected = sp.configVersion

		return nil
	})
	if err != nil {
		return err
	}

	u.log(" > %q: waiting for %s pod update", node, component)

	err = u.waitFor(ctx, 10*time.Minute, fmt.Sprintf(" > %q: %s: ", node, component), func() error {
		pods, err := u.kube.ComponentPods(ctx, component)
		if err != nil {
			return fmt.Errorf("waiting, %v", err)
		}

		for _, p := range pods {
			if !p.Mirror() || p.HostIP != node {
				continue
			}

			if got := p.Annotations["talos.dev/config-version"]; got != expected {
				return fmt.Errorf("waiting, config version mismatch: got %q, expected %q", got, expected)
			}

			if !p.Ready {
				return errors.New("pod is not ready, waiting")
			}

			return nil
		}

		return errors.New("waiting, no pod on the node yet")
	})
	if err != nil {
		return err
	}

	u.log(" < %q: successfully updated", node)

	return nil
}

// upgradeProxy patches kube-proxy's image in every control plane's
// config; the manifests sync rolls the DaemonSet out.
func (u *k8sUpgrade) upgradeProxy(ctx context.Context) error {
	u.log("updating kube-proxy to version %q", u.o.To)

	for _, node := range u.controlPlanes {
		u.log(" > %q: starting update", node)

		current, err := u.configImage(ctx, node, "kube-proxy")
		if err != nil {
			return err
		}

		if _, err := u.patchImage(ctx, node, "kube-proxy", current); err != nil {
			return fmt.Errorf("updating kube-proxy on %q: %w", node, err)
		}
	}

	return nil
}

// upgradeKubelet moves one node's kubelet and waits for the node to
// report the new version Ready.
func (u *k8sUpgrade) upgradeKubelet(ctx context.Context, node string) error {
	u.log(" > %q: starting update", node)

	if err := u.waitFor(ctx, 5*time.Minute, "", func() error { return kubeletHealthy(ctx, u.reach, node) }); err != nil {
		return err
	}

	current, err := u.configImage(ctx, node, "kubelet")
	if err != nil {
		return err
	}

	patched, err := u.patchImage(ctx, node, "kubelet", current)
	if err != nil {
		return err
	}

	if u.o.DryRun {
		return nil
	}

	if patched {
		u.log(" > %q: waiting for kubelet restart", node)

		if err := u.waitFor(ctx, 5*time.Minute, "", func() error { return kubeletHealthy(ctx, u.reach, node) }); err != nil {
			return err
		}
	}

	u.log(" > %q: waiting for node update", node)

	err = u.waitFor(ctx, 10*time.Minute, "", func() error {
		infos, err := u.kube.Nodes(ctx)
		if err != nil {
			return err
		}

		for _, n := range infos {
			if n.IP != node {
				continue
			}

			if n.KubeletVersion != "v"+u.o.To {
				return fmt.Errorf("node %s reports kubelet %s", n.Name, n.KubeletVersion)
			}

			if !n.Ready {
				return fmt.Errorf("node %s is not Ready", n.Name)
			}

			return nil
		}

		return errors.New("the node is not in Kubernetes")
	})
	if err != nil {
		return err
	}

	u.log(" < %q: successfully updated", node)

	return nil
}

// kubeletHealthy: the node's kubelet service runs and passes its check,
// and runs the spec its config asks for (not the one before a patch).
func kubeletHealthy(ctx context.Context, reach client.Reach, node string) error {
	list, err := client.OnNode(ctx, reach, node, func(ctx context.Context, c *client.Client) (*machine.ServiceList, error) {
		return c.Services(ctx)
	})
	if err != nil {
		return errors.New(client.Message(err))
	}

	return client.ServiceHealthy(list, "kubelet")
}

// syncManifests: the nodes apply the bootstrap manifests themselves
// (server-side, whenever the config changes), so upgrade-k8s reports what
// the first control plane applied and waits for the rollouts.
func (u *k8sUpgrade) syncManifests(ctx context.Context) error {
	u.log("updating manifests")

	if u.o.DryRun {
		u.log(" > skipped in dry-run")
		return nil
	}

	node := u.controlPlanes[0]

	var objects []string

	err := u.waitFor(ctx, 5*time.Minute, "", func() error {
		st, err := readManifestStatus(ctx, u.reach, node)
		if err != nil {
			return err
		}

		if st.Error != "" {
			return errors.New(st.Error)
		}

		objects = append(append(append([]string{}, st.ObjectsCreated...), st.ObjectsUpdated...), st.ObjectsUnchanged...)

		// The DaemonSet carries the new image once the node has applied
		// the manifests rendered from the patched config.
		ds, err := u.kube.DaemonSet(ctx, "kube-system", "kube-proxy")
		if IsNotFound(err) {
			return nil
		}

		if err != nil {
			return err
		}

		if len(ds.Images) == 0 || ds.Images[0] != u.image("kube-proxy") {
			return errors.New("kube-proxy's DaemonSet does not have the new image yet")
		}

		return nil
	})
	if err != nil {
		return err
	}

	for _, o := range objects {
		u.log(" > processing manifest %s", o)
	}

	u.log("waiting for all manifests to be applied")

	for _, w := range []struct {
		daemonSet  bool
		name, what string
	}{
		{true, "kube-proxy", "apps/v1/DaemonSet/kube-system/kube-proxy"},
		{true, "kube-flannel", "apps/v1/DaemonSet/kube-system/kube-flannel"},
		{false, "coredns", "apps/v1/Deployment/kube-system/coredns"},
	} {
		u.log(" > waiting for %s", w.what)

		err := u.waitFor(ctx, 10*time.Minute, "", func() error {
			read := u.kube.Deployment
			if w.daemonSet {
				read = u.kube.DaemonSet
			}

			r, err := read(ctx, "kube-system", w.name)
			if IsNotFound(err) {
				return nil
			}

			if err != nil {
				return err
			}

			return r.Done()
		})
		if err != nil {
			return fmt.Errorf("%s: %w", w.what, err)
		}
	}

	return nil
}

// manifestStatus is the part of ManifestStatus upgrade-k8s reports.
type manifestStatus struct {
	ObjectsCreated   []string `yaml:"objectsCreated"`
	ObjectsUpdated   []string `yaml:"objectsUpdated"`
	ObjectsUnchanged []string `yaml:"objectsUnchanged"`
	Error            string   `yaml:"error"`
}

func readManifestStatus(ctx context.Context, reach client.Reach, node string) (manifestStatus, error) {
	return client.OnNode(ctx, reach, node, func(ctx context.Context, c *client.Client) (manifestStatus, error) {
		var st manifestStatus

		resp, err := c.Resource.Get(ctx, &resource.GetRequest{Type: k8s.ManifestStatusType, Id: k8s.ManifestStatusID})
		if err != nil {
			return st, err
		}

		if err := client.MetadataError(resp.GetMetadata()); err != nil {
			return st, err
		}

		err = yaml.Unmarshal(resp.GetResource().GetSpecYaml(), &st)

		return st, err
	})
}
