package k8s

import (
	"context"
	"strings"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// NodenameController names the Kubernetes node after the hostname, or its
// FQDN with machine.kubelet.registerWithFQDN (Talos's NodenameController).
// Kubernetes node names are lowercase.
type NodenameController struct{}

// Name implements bus.Controller.
func (NodenameController) Name() string { return "k8s.NodenameController" }

// Inputs implements bus.Controller.
func (NodenameController) Inputs() []bus.Input {
	return []bus.Input{machineConfigInput, {Namespace: networkres.Namespace, Type: networkres.HostnameStatusType, ID: networkres.HostnameID}}
}

// Outputs implements bus.Controller.
func (NodenameController) Outputs() []bus.Output { return []bus.Output{{Type: k8s.NodenameType}} }

// Run implements bus.Controller.
func (c NodenameController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		hs, err := bus.GetAs[*networkres.HostnameStatus](ctx, r, bus.Pointer{Namespace: networkres.Namespace, Type: networkres.HostnameStatusType, ID: networkres.HostnameID})
		if bus.IsNotFound(err) || cfg == nil {
			continue
		}

		if err != nil {
			return err
		}

		spec := k8s.NodenameSpec{Nodename: hs.TypedSpec().Hostname}
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

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.NodenameType, map[string]k8s.NodenameSpec{k8s.NodenameID: spec}); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
