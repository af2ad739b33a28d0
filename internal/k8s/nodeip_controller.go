package k8s

import (
	"context"
	"net/netip"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// NodeIPController picks the node IP the kubelet registers with from the
// node's addresses (Talos's NodeIPConfigController and NodeIPController
// in one): NodeIPConfig says how, NodeIP what.
type NodeIPController struct{}

// Name implements bus.Controller.
func (NodeIPController) Name() string { return "k8s.NodeIPController" }

// Inputs implements bus.Controller.
func (NodeIPController) Inputs() []bus.Input {
	return []bus.Input{machineConfigInput, {Namespace: networkres.Namespace, Type: networkres.NodeAddressType, ID: networkres.NodeAddressesCur}}
}

// Outputs implements bus.Controller.
func (NodeIPController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.NodeIPConfigType}, {Type: k8s.NodeIPType}}
}

// Run implements bus.Controller.
func (c NodeIPController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		if cfg == nil {
			continue
		}

		cl, err := render.ClusterFrom(cfg)
		if err != nil {
			continue
		}

		var valid []string
		if k := cfg.Machine.Kubelet; k != nil && k.NodeIP != nil {
			valid = k.NodeIP.ValidSubnets
		}

		ipc := render.NodeIPConfigFor(valid, cl)
		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.NodeIPConfigType, map[string]k8s.NodeIPConfigSpec{k8s.KubeletID: ipc}); err != nil {
			return err
		}

		na, err := bus.GetAs[*networkres.NodeAddress](ctx, r, bus.Pointer{Namespace: networkres.Namespace, Type: networkres.NodeAddressType, ID: networkres.NodeAddressesCur})
		if bus.IsNotFound(err) {
			continue
		}

		if err != nil {
			return err
		}

		var addrs []netip.Addr
		for _, p := range na.TypedSpec().Addresses {
			if p.Addr().IsGlobalUnicast() {
				addrs = append(addrs, p.Addr())
			}
		}

		picked, skipped, err := render.PickNodeIPs(ipc, addrs)
		if err != nil {
			r.Logger().Error("node IP", "error", err)
			continue
		}

		for _, a := range skipped {
			r.Logger().Warn("node IP skipped, please use .machine.kubelet.nodeIP to provide explicit subnet for the node IP", "address", a)
		}

		if len(picked) == 0 {
			r.Logger().Warn("no suitable node IP found, please make sure .machine.kubelet.nodeIP filters and pod/service subnets are set up correctly")
			continue
		}

		spec := k8s.NodeIPSpec{}
		for _, a := range picked {
			spec.Addresses = append(spec.Addresses, a.String())
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.NodeIPType, map[string]k8s.NodeIPSpec{k8s.KubeletID: spec}); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
