package talosctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/images"
)

// k8sUpgradeOptions are upgrade-k8s's flags.
type k8sUpgradeOptions struct {
	from, to       string
	endpoint       string
	dryRun         bool
	prePull        bool
	upgradeKubelet bool

	apiserverImage, controllerManagerImage, schedulerImage, proxyImage, kubeletImage string
}

// The three static-pod components, in the order Talos upgrades them.
var controlPlaneComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

func newUpgradeK8sCommand(g *GlobalFlags) *cobra.Command {
	var o k8sUpgradeOptions

	cmd := &cobra.Command{
		Use:   "upgrade-k8s",
		Short: "Upgrade Kubernetes control plane in the Talos cluster.",
		Long: `Upgrades the cluster's Kubernetes one control-plane component and one node
at a time, by patching each node's machine config (no reboot) and waiting
until the kubelet runs the new pod Ready: kube-apiserver, kube-controller-
manager and kube-scheduler on each control plane, then kube-proxy, then the
kubelet on every node, then the bootstrap manifests' rollouts.

Give one control-plane node with -n; the others are found through Kubernetes.
The path may move one minor version up at most (1.33.x -> 1.34.y) or to
another patch of the same minor. An interrupted upgrade is resumed by running
the same command again: what is already at the target is skipped. To roll
back, apply the previous machine configs.`,
		Example: `  talosctl -n 172.20.0.2 upgrade-k8s --to 1.34.12
  talosctl -n 172.20.0.2 upgrade-k8s --from 1.33.13 --to 1.34.12 --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withSession(false, func(s *session) error {
				if len(s.nodes) != 1 {
					return errors.New("upgrade-k8s needs exactly one node (-n): a control plane, through which it finds the others")
				}

				u := &k8sUpgrade{s: s, o: o, out: cmd.OutOrStdout()}

				return u.run(cmd.Context())
			})
		},
	}

	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "the Kubernetes version to upgrade from (default: the lowest version found on the nodes)")
	f.StringVar(&o.to, "to", images.Kubernetes, "the Kubernetes version to upgrade to")
	f.StringVar(&o.endpoint, "endpoint", "", "the Kubernetes API endpoint to use (default: the one in the admin kubeconfig)")
	f.BoolVar(&o.dryRun, "dry-run", false, "show what would change, change nothing")
	f.BoolVar(&o.prePull, "pre-pull-images", true, "pull the new images on every node before the first change")
	f.BoolVar(&o.upgradeKubelet, "upgrade-kubelet", true, "upgrade the kubelet on every node too")
	f.StringVar(&o.apiserverImage, "apiserver-image", imageRepository(images.APIServer(images.Kubernetes).String()), "kube-apiserver image repository")
	f.StringVar(&o.controllerManagerImage, "controller-manager-image", imageRepository(images.ControllerManager(images.Kubernetes).String()), "kube-controller-manager image repository")
	f.StringVar(&o.schedulerImage, "scheduler-image", imageRepository(images.Scheduler(images.Kubernetes).String()), "kube-scheduler image repository")
	f.StringVar(&o.proxyImage, "proxy-image", imageRepository(images.Proxy(images.Kubernetes).String()), "kube-proxy image repository")
	f.StringVar(&o.kubeletImage, "kubelet-image", imageRepository(images.Kubelet(images.Kubernetes).String()), "kubelet image repository")
	f.Bool("with-docs", true, "accepted for talosctl compatibility: the patched config keeps its comments either way")
	f.Bool("with-examples", true, "accepted for talosctl compatibility: the patched config keeps its comments either way")

	return cmd
}

// k8sUpgrade is one run of upgrade-k8s.
type k8sUpgrade struct {
	s   *session
	o   k8sUpgradeOptions
	out io.Writer

	kube                   *kubernetes.Client
	controlPlanes, workers []string
}

func (u *k8sUpgrade) log(format string, args ...any) { fmt.Fprintf(u.out, format+"\n", args...) }

// image is the target reference of one component.
func (u *k8sUpgrade) image(component string) string {
	repo := map[string]string{
		"kube-apiserver": u.o.apiserverImage, "kube-controller-manager": u.o.controllerManagerImage,
		"kube-scheduler": u.o.schedulerImage, "kube-proxy": u.o.proxyImage, "kubelet": u.o.kubeletImage,
	}[component]

	return repo + ":v" + u.o.to
}

func (u *k8sUpgrade) run(ctx context.Context) error {
	to, err := images.CanonicalKubernetes(u.o.to)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}

	u.o.to = to

	u.s.controlPlanes = u.s.nodes

	if u.kube, err = u.s.kube(ctx); err != nil {
		return err
	}

	if u.o.endpoint != "" {
		if u.kube, err = u.kube.WithServer(u.o.endpoint); err != nil {
			return err
		}
	}

	if err := u.discover(ctx); err != nil {
		return err
	}

	if u.o.from == "" {
		if u.o.from, err = u.detectFrom(ctx); err != nil {
			return err
		}

		u.log("automatically detected the lowest Kubernetes version %s", u.o.from)
	}

	if err := checkUpgradePath(u.o.from, u.o.to); err != nil {
		return err
	}

	if err := checkSupportedVersion(u.o.to); err != nil {
		return err
	}

	for _, node := range append(append([]string{}, u.controlPlanes...), u.workers...) {
		v, err := onNode(ctx, u.s, node, func(ctx context.Context, c *client.Client) (string, error) {
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

		u.log(" > %q: talosbox version %s is compatible with Kubernetes version %s", node, v, u.o.to)
	}

	if u.o.prePull {
		if err := u.prePull(ctx); err != nil {
			return err
		}
	}

	for _, component := range controlPlaneComponents {
		u.log("updating %q to version %q", component, u.o.to)

		for _, node := range u.controlPlanes {
			if err := u.upgradeStaticPod(ctx, component, node); err != nil {
				return fmt.Errorf("updating %q on %q: %w", component, node, err)
			}
		}
	}

	if err := u.upgradeProxy(ctx); err != nil {
		return err
	}

	if u.o.upgradeKubelet {
		u.log("updating kubelet to version %q", u.o.to)

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
	text, err := onNode(ctx, u.s, node, fetchMachineConfig)
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

		_, err := onNode(ctx, u.s, node, func(ctx context.Context, c *client.Client) (*machine.ImagePull, error) {
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

	if !u.o.upgradeKubelet {
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
func (u *k8sUpgrade) patchImage(ctx context.Context, node, component, yamlPath, current string) (bool, error) {
	want := u.image(component)
	if current == want {
		u.log(" > %q: %s is already at %s", node, component, want)
		return false, nil
	}

	u.log(" > update %s: %s -> %s", component, u.oldTag(current), u.o.to)

	if u.o.dryRun {
		u.log(" > skipped in dry-run")
		return false, nil
	}

	ps, err := configpatch.Parse([]byte(nestedPatch(yamlPath, want)))
	if err != nil {
		return false, err
	}

	_, err = onNode(ctx, u.s, node, func(ctx context.Context, c *client.Client) (*machine.ApplyConfiguration, error) {
		current, err := fetchMachineConfig(ctx, c)
		if err != nil {
			return nil, err
		}

		patched, err := configpatch.Apply(current, ps...)
		if err != nil {
			return nil, fmt.Errorf("patch machine config: %w", err)
		}

		return applyTo(ctx, c, &machine.ApplyConfigurationRequest{Data: patched, Mode: machine.ApplyConfigurationRequest_NO_REBOOT})
	})
	if err != nil {
		return false, fmt.Errorf("apply config: %s", client.Message(err))
	}

	u.log(" > %q: machine configuration patched", node)

	return true, nil
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

	return u.o.from
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
