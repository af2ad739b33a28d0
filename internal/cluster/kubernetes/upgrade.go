package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/images"
)

// The three static-pod components, in the order Talos upgrades them.
var controlPlaneComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// UpgradeOptions are upgrade-k8s's settings.
type UpgradeOptions struct {
	// From is the version to upgrade from; the lowest found on the nodes
	// when empty. To is the version to upgrade to.
	From, To string
	// Endpoint, when set, is the API server address to use instead of
	// the admin kubeconfig's.
	Endpoint string
	// DryRun shows what would change and changes nothing.
	DryRun bool
	// PrePull pulls every new image on every node before the first change.
	PrePull bool
	// UpgradeKubelet upgrades every node's kubelet too.
	UpgradeKubelet bool
	// The components' image repositories; the tag is "v"+To.
	APIServerImage, ControllerManagerImage, SchedulerImage, ProxyImage, KubeletImage string
}

// Upgrade upgrades the cluster's Kubernetes one control-plane component
// and one node at a time, printing its progress to out. kube gives the
// cluster's API server client, through which the nodes are found; it is
// called once the options are checked, so a bad version is refused
// without reaching the cluster. reach reaches the nodes' APIs.
func Upgrade(ctx context.Context, out io.Writer, reach client.Reach, kube func(context.Context) (*Client, error), o UpgradeOptions) error {
	u := &k8sUpgrade{reach: reach, getKube: kube, o: o, out: out}

	return u.run(ctx)
}

// k8sUpgrade is one run of upgrade-k8s.
type k8sUpgrade struct {
	reach   client.Reach
	getKube func(context.Context) (*Client, error)
	o       UpgradeOptions
	out     io.Writer

	kube                   *Client
	controlPlanes, workers []string
}

func (u *k8sUpgrade) log(format string, args ...any) { fmt.Fprintf(u.out, format+"\n", args...) }

// image is the target reference of one component.
func (u *k8sUpgrade) image(component string) string {
	repo := map[string]string{
		"kube-apiserver": u.o.APIServerImage, "kube-controller-manager": u.o.ControllerManagerImage,
		"kube-scheduler": u.o.SchedulerImage, "kube-proxy": u.o.ProxyImage, "kubelet": u.o.KubeletImage,
	}[component]

	return repo + ":v" + u.o.To
}

func (u *k8sUpgrade) run(ctx context.Context) error {
	to, err := images.CanonicalKubernetes(u.o.To)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}

	u.o.To = to

	if u.kube, err = u.getKube(ctx); err != nil {
		return err
	}

	if u.o.Endpoint != "" {
		if u.kube, err = u.kube.WithServer(u.o.Endpoint); err != nil {
			return err
		}
	}

	if err := u.discover(ctx); err != nil {
		return err
	}

	if u.o.From == "" {
		if u.o.From, err = u.detectFrom(ctx); err != nil {
			return err
		}

		u.log("automatically detected the lowest Kubernetes version %s", u.o.From)
	}

	if err := checkUpgradePath(u.o.From, u.o.To); err != nil {
		return err
	}

	if err := checkSupportedVersion(u.o.To); err != nil {
		return err
	}

	for _, node := range append(append([]string{}, u.controlPlanes...), u.workers...) {
		v, err := client.OnNode(ctx, u.reach, node, func(ctx context.Context, c *client.Client) (string, error) {
			resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
			if err != nil {
				return "", err
			}

			m, err := client.FirstMessage(resp.GetMessages())

			return m.GetVersion().GetTag(), err
		})
		if err != nil {
			return fmt.Errorf("%q: version: %s", node, client.Message(err))
		}

		u.log(" > %q: talosbox version %s is compatible with Kubernetes version %s", node, v, u.o.To)
	}

	if u.o.PrePull {
		if err := u.prePull(ctx); err != nil {
			return err
		}
	}

	for _, component := range controlPlaneComponents {
		u.log("updating %q to version %q", component, u.o.To)

		for _, node := range u.controlPlanes {
			if err := u.upgradeStaticPod(ctx, component, node); err != nil {
				return fmt.Errorf("updating %q on %q: %w", component, node, err)
			}
		}
	}

	if err := u.upgradeProxy(ctx); err != nil {
		return err
	}

	if u.o.UpgradeKubelet {
		u.log("updating kubelet to version %q", u.o.To)

		for _, node := range append(append([]string{}, u.controlPlanes...), u.workers...) {
			if err := u.upgradeKubelet(ctx, node); err != nil {
				return fmt.Errorf("updating kubelet on %q: %w", node, err)
			}
		}
	} else {
		u.log("skipped updating kubelet")
	}

	return u.syncManifests(ctx)
}

// discover finds the nodes through Kubernetes, as Talos does, and wants
// them all Ready: an upgrade starts from a healthy cluster.
func (u *k8sUpgrade) discover(ctx context.Context) error {
	infos, err := u.kube.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("discover nodes: %w", err)
	}

	var notReady []string

	for _, n := range infos {
		if n.IP == "" {
			return fmt.Errorf("node %s has no InternalIP", n.Name)
		}

		if n.ControlPlane() {
			u.controlPlanes = append(u.controlPlanes, n.IP)
		} else {
			u.workers = append(u.workers, n.IP)
		}

		if !n.Ready {
			notReady = append(notReady, n.Name)
		}
	}

	u.log("discovered controlplane nodes %s", quoteList(u.controlPlanes))
	u.log("discovered worker nodes %s", quoteList(u.workers))

	if len(u.controlPlanes) == 0 {
		return errors.New("no control plane node found in Kubernetes")
	}

	if len(notReady) > 0 {
		return fmt.Errorf("nodes not Ready: %s: upgrade-k8s starts from a healthy cluster (talosctl health)", strings.Join(notReady, ", "))
	}

	return nil
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}

	return "[" + strings.Join(q, " ") + "]"
}

// detectFrom is the lowest version the configs and the kubelets run.
func (u *k8sUpgrade) detectFrom(ctx context.Context) (string, error) {
	var versions []string

	for _, node := range u.controlPlanes {
		cfg, err := u.config(ctx, node)
		if err != nil {
			return "", err
		}

		if a := cfg.Cluster.APIServer; a != nil {
			versions = append(versions, imageTagVersion(a.Image))
		}
	}

	infos, err := u.kube.Nodes(ctx)
	if err != nil {
		return "", err
	}

	for _, n := range infos {
		if v, err := images.CanonicalKubernetes(n.KubeletVersion); err == nil {
			versions = append(versions, v)
		}
	}

	return lowestVersion(versions)
}

// config reads and decodes one node's machine config.
func (u *k8sUpgrade) config(ctx context.Context, node string) (*configs.Config, error) {
	text, err := client.OnNode(ctx, u.reach, node, machineConfig)
	if err != nil {
		return nil, fmt.Errorf("%q: %s", node, client.Message(err))
	}

	cfg, err := configs.Decode(text)
	if err != nil {
		return nil, fmt.Errorf("%q: machine config: %w", node, err)
	}

	if cfg.Cluster == nil {
		cfg.Cluster = &configs.ClusterConfig{}
	}

	if cfg.Machine == nil {
		cfg.Machine = &configs.MachineConfig{}
	}

	return cfg, nil
}

func (u *k8sUpgrade) prePull(ctx context.Context) error {
	pull := func(node string, ns common.ContainerdNamespace, ref string) error {
		u.log(" > %q: pre-pulling %s", node, ref)

		_, err := client.OnNode(ctx, u.reach, node, func(ctx context.Context, c *client.Client) (*machine.ImagePull, error) {
			resp, err := c.Machine.ImagePull(ctx, &machine.ImagePullRequest{Namespace: ns, Reference: ref})
			if err != nil {
				return nil, err
			}

			return client.FirstMessage(resp.GetMessages())
		})
		if err != nil {
			return fmt.Errorf("%q: pre-pull %s: %s", node, ref, client.Message(err))
		}

		return nil
	}

	for _, node := range u.controlPlanes {
		for _, component := range append(append([]string{}, controlPlaneComponents...), "kube-proxy") {
			if err := pull(node, common.ContainerdNamespace_NS_CRI, u.image(component)); err != nil {
				return err
			}
		}
	}

	if !u.o.UpgradeKubelet {
		return nil
	}

	for _, node := range append(append([]string{}, u.controlPlanes...), u.workers...) {
		if err := pull(node, common.ContainerdNamespace_NS_SYSTEM, u.image("kubelet")); err != nil {
			return err
		}
	}

	return nil
}

// patchImage sets one image in a node's config, with no reboot. It
// reports false when the node already has it, or in a dry run.
func (u *k8sUpgrade) patchImage(ctx context.Context, node, component, current string) (bool, error) {
	want := u.image(component)
	if current == want {
		u.log(" > %q: %s is already at %s", node, component, want)
		return false, nil
	}

	u.log(" > update %s: %s -> %s", component, u.oldTag(current), u.o.To)

	if u.o.DryRun {
		u.log(" > skipped in dry-run")
		return false, nil
	}

	_, err := client.OnNode(ctx, u.reach, node, func(ctx context.Context, c *client.Client) (*machine.ApplyConfiguration, error) {
		current, err := c.MachineConfig(ctx)
		if err != nil {
			return nil, err
		}

		patched, err := withImage(current, component, want)
		if err != nil {
			return nil, err
		}

		return c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: patched, Mode: machine.ApplyConfigurationRequest_NO_REBOOT})
	})
	if err != nil {
		return false, fmt.Errorf("apply config: %s", client.Message(err))
	}

	u.log(" > %q: machine configuration patched", node)

	return true, nil
}

// componentDocuments are the documents that hold each component's image
// in a Talos 1.14 config (KubeAPIServerConfig, ...).
var componentDocuments = map[string]string{
	"kube-apiserver":          "KubeAPIServerConfig",
	"kube-controller-manager": "KubeControllerManagerConfig",
	"kube-scheduler":          "KubeSchedulerConfig",
	"kube-proxy":              "KubeProxyConfig",
	"kubelet":                 "KubeletConfig",
}

// withImage patches a node's config (YAML) to run component's image: in
// the component's document when the config has one (/KubeAPIServerConfig/
// image), else in the v1alpha1 field (cluster.apiServer.image): setting
// the v1alpha1 field next to the document would be a conflict the node
// refuses.
func withImage(config []byte, component, image string) ([]byte, error) {
	cfg, err := configs.Decode(config)
	if err != nil {
		return nil, fmt.Errorf("the node's machine config: %w", err)
	}

	patch := nestedPatch(componentConfigPath[component], image)

	kind := componentDocuments[component]
	if slices.ContainsFunc(cfg.Documents, func(d configs.Document) bool { return d.Kind() == kind }) {
		op, err := json.Marshal([]map[string]string{{"op": "add", "path": "/" + kind + "/image", "value": image}})
		if err != nil {
			return nil, err
		}

		patch = string(op)
	}

	ps, err := configpatch.Parse([]byte(patch))
	if err != nil {
		return nil, err
	}

	patched, err := configpatch.Apply(config, ps...)
	if err != nil {
		return nil, fmt.Errorf("patch machine config: %w", err)
	}

	return patched, nil
}

// nestedPatch is a merge patch setting path ("cluster.apiServer.image") to value.
func nestedPatch(path, value string) string {
	var b strings.Builder

	parts := strings.Split(path, ".")
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")

		if i == len(parts)-1 {
			fmt.Fprintf(&b, " %q\n", value)
		} else {
			b.WriteString("\n")
		}
	}

	return b.String()
}

// oldTag is how Talos names the version a component moves from: the old
// image's tag as written ("v1.33.13"), else the --from version.
func (u *k8sUpgrade) oldTag(image string) string {
	slash := strings.LastIndexByte(image, '/')
	if i := strings.LastIndexByte(image, ':'); i > slash {
		return image[i+1:]
	}

	return u.o.From
}

// waitFor is waitUntil that prints each new reason to wait once, after
// prefix; an empty prefix waits quietly.
func (u *k8sUpgrade) waitFor(ctx context.Context, timeout time.Duration, prefix string, check func() error) error {
	last := ""

	return waitUntil(ctx, timeout, func() error {
		err := check()
		if err != nil && prefix != "" && err.Error() != last {
			u.log("%s%s", prefix, err)
			last = err.Error()
		}

		return err
	})
}

// machineConfig reads the node's config text (a call for client.OnNode).
func machineConfig(ctx context.Context, c *client.Client) ([]byte, error) {
	return c.MachineConfig(ctx)
}
