package k8s

import (
	"context"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
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
		{Namespace: k8s.NamespaceK8s, Type: k8s.NodenameType},
		{Namespace: k8s.NamespaceK8s, Type: k8s.NodeIPType},
		{Namespace: k8s.NamespaceK8s, Type: k8s.StaticPodServerStatusType},
	}
}

// Outputs implements bus.Controller.
func (*KubeletSpecController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.KubeletSpecType}}
}

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

		name, err := bus.GetAs[*k8s.Nodename](ctx, r, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.NodenameType, ID: k8s.NodenameID})
		if bus.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}

		ip, err := bus.GetAs[*k8s.NodeIP](ctx, r, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.NodeIPType, ID: k8s.KubeletID})
		if bus.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}

		srv, err := bus.GetAs[*k8s.StaticPodServerStatus](ctx, r, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.StaticPodServerStatusType, ID: k8s.StaticPodServerID})
		if bus.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}

		spec, err := render.KubeletSpecFor(cfg, render.KubeletInputs{
			Nodename: name.TypedSpec().Nodename, NodeIPs: ip.TypedSpec().Addresses,
			StaticPodURL: srv.TypedSpec().URL, InContainer: c.InContainer,
		})
		if err != nil {
			r.Logger().Error("kubelet spec", "error", err)
			continue
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.KubeletSpecType, map[string]k8s.KubeletSpecSpec{k8s.KubeletID: spec}); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
