package talos

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
	"github.com/talosbox/talosbox/internal/images"
)

func NewUpgradeK8sCommand(g *global.Args) *cobra.Command {
	var o kubernetes.UpgradeOptions

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
			return g.WithSession(false, func(s *global.Session) error {
				if len(s.Nodes) != 1 {
					return errors.New("upgrade-k8s needs exactly one node (-n): a control plane, through which it finds the others")
				}

				s.ControlPlanes = s.Nodes

				return kubernetes.Upgrade(cmd.Context(), cmd.OutOrStdout(), s.Reach, s.Kube, o)
			})
		},
	}

	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "the Kubernetes version to upgrade from (default: the lowest version found on the nodes)")
	f.StringVar(&o.To, "to", images.Kubernetes, "the Kubernetes version to upgrade to")
	f.StringVar(&o.Endpoint, "endpoint", "", "the Kubernetes API endpoint to use (default: the one in the admin kubeconfig)")
	f.BoolVar(&o.DryRun, "dry-run", false, "show what would change, change nothing")
	f.BoolVar(&o.PrePull, "pre-pull-images", true, "pull the new images on every node before the first change")
	f.BoolVar(&o.UpgradeKubelet, "upgrade-kubelet", true, "upgrade the kubelet on every node too")
	f.StringVar(&o.APIServerImage, "apiserver-image", kubernetes.ImageRepository(images.APIServer(images.Kubernetes).String()), "kube-apiserver image repository")
	f.StringVar(&o.ControllerManagerImage, "controller-manager-image", kubernetes.ImageRepository(images.ControllerManager(images.Kubernetes).String()), "kube-controller-manager image repository")
	f.StringVar(&o.SchedulerImage, "scheduler-image", kubernetes.ImageRepository(images.Scheduler(images.Kubernetes).String()), "kube-scheduler image repository")
	f.StringVar(&o.ProxyImage, "proxy-image", kubernetes.ImageRepository(images.Proxy(images.Kubernetes).String()), "kube-proxy image repository")
	f.StringVar(&o.KubeletImage, "kubelet-image", kubernetes.ImageRepository(images.Kubelet(images.Kubernetes).String()), "kubelet image repository")
	f.Bool("with-docs", true, "accepted for talosctl compatibility: the patched config keeps its comments either way")
	f.Bool("with-examples", true, "accepted for talosctl compatibility: the patched config keeps its comments either way")

	return cmd
}
