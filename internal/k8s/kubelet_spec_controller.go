package k8s

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
)

// KubeletSpecController renders the kubelet's command line and
// configuration once the node has a name, an IP and the static pod
// server's URL (Talos's KubeletConfigController and KubeletSpecController
// in one).
type KubeletSpecController struct {
	// InContainer is a node in a container (Docker).
	InContainer bool
}

// Name implements bus.Controller.
func (*KubeletSpecController) Name() string { return "k8s.KubeletSpecController" }

// Inputs implements bus.Controller.
func (*KubeletSpecController) Inputs() []bus.Input {
	return []bus.Input{
		machineConfigInput,
		{Namespace: NamespaceK8s, Type: NodenameType},
		{Namespace: NamespaceK8s, Type: NodeIPType},
		{Namespace: NamespaceK8s, Type: StaticPodServerStatusType},
	}
}

// Outputs implements bus.Controller.
func (*KubeletSpecController) Outputs() []bus.Output { return []bus.Output{{Type: KubeletSpecType}} }

// Run implements bus.Controller.
func (c *KubeletSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		if cfg == nil || cfg.Cluster == nil {
			continue
		}

		name, err := bus.GetAs[*Nodename](ctx, r, bus.Pointer{Namespace: NamespaceK8s, Type: NodenameType, ID: NodenameID})
		if bus.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}

		ip, err := bus.GetAs[*NodeIP](ctx, r, bus.Pointer{Namespace: NamespaceK8s, Type: NodeIPType, ID: KubeletID})
		if bus.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}

		srv, err := bus.GetAs[*StaticPodServerStatus](ctx, r, bus.Pointer{Namespace: NamespaceK8s, Type: StaticPodServerStatusType, ID: StaticPodServerID})
		if bus.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}

		spec, err := KubeletSpecFor(cfg, KubeletInputs{
			Nodename: name.TypedSpec().Nodename, NodeIPs: ip.TypedSpec().Addresses,
			StaticPodURL: srv.TypedSpec().URL, InContainer: c.InContainer,
		})
		if err != nil {
			r.Logger().Error("kubelet spec", "error", err)
			continue
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), NamespaceK8s, KubeletSpecType, map[string]KubeletSpecSpec{KubeletID: spec}); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
