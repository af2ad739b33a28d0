package talos

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

func NewConvertK8sCommand(g *global.Args) *cobra.Command {
	var o kubernetes.ConvertOptions

	cmd := &cobra.Command{
		Use:   "convert-k8s",
		Short: "Convert Kubernetes control plane from self-hosted (bootkube) to Talos-managed (static pods).",
		Long: `Finds a self-hosted control plane (the kube-apiserver, kube-controller-manager
and kube-scheduler DaemonSets of a bootkube cluster, in kube-system) and hands
the control plane over to the static pods talosbox renders from the machine
configs: it checks the definitions and manifests are there, disables
pod-checkpointer, and deletes each DaemonSet once its static pods serve.

On a cluster that runs static pods already it says so and changes nothing.
It asks before each step that cannot be undone; --force answers yes.`,
		Example: `  talosctl -n 172.20.0.2 convert-k8s
  talosctl -n 172.20.0.2 convert-k8s --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithSession(false, func(s *global.Session) error {
				if len(s.Nodes) != 1 {
					return errors.New("convert-k8s needs exactly one node (-n): a control plane, through which it finds the others")
				}

				s.ControlPlanes = s.Nodes

				return kubernetes.Convert(cmd.Context(), cmd.OutOrStdout(), cmd.InOrStdin(), s.Reach, s.Kube, o)
			})
		},
	}

	f := cmd.Flags()
	f.StringVar(&o.Endpoint, "endpoint", "", "the Kubernetes API endpoint to use (default: the one in the admin kubeconfig)")
	f.BoolVar(&o.Force, "force", false, "skip the prompts, answering yes")
	f.BoolVar(&o.RemoveInitializedKey, "remove-initialized-key", false, "only release the static pods (the manual flow's step) and exit")

	return cmd
}
