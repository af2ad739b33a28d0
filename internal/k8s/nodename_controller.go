package k8s

import (
	"context"
	"strings"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/network"
)

// NodenameController names the Kubernetes node after the hostname, or its
// FQDN with machine.kubelet.registerWithFQDN (Talos's NodenameController).
// Kubernetes node names are lowercase.
type NodenameController struct{}

// Name implements bus.Controller.
func (NodenameController) Name() string { return "k8s.NodenameController" }

// Inputs implements bus.Controller.
func (NodenameController) Inputs() []bus.Input {
	return []bus.Input{machineConfigInput, {Namespace: network.Namespace, Type: network.HostnameStatusType, ID: network.HostnameID}}
}

// Outputs implements bus.Controller.
func (NodenameController) Outputs() []bus.Output { return []bus.Output{{Type: NodenameType}} }

// Run implements bus.Controller.
func (c NodenameController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		hs, err := bus.GetAs[*network.HostnameStatus](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.HostnameStatusType, ID: network.HostnameID})
		if bus.IsNotFound(err) || cfg == nil {
			continue
		}

		if err != nil {
			return err
		}

		spec := NodenameSpec{Nodename: hs.TypedSpec().Hostname}
		if k := cfg.Machine.Kubelet; k != nil {
			if k.RegisterWithFQDN {
				spec.Nodename = hs.TypedSpec().FQDN()
			}

			spec.SkipNodeRegistry = k.SkipNodeRegistration
		}

		spec.Nodename = strings.ToLower(spec.Nodename)
		if spec.Nodename == "" {
			continue
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), NamespaceK8s, NodenameType, map[string]NodenameSpec{NodenameID: spec}); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
