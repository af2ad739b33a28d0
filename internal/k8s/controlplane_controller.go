package k8s

import (
	"context"
	"errors"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

var machineConfigInput = bus.Input{Namespace: config.NamespaceConfig, Type: config.MachineConfigType}

// activeConfig is the config in effect, nil before there is one.
func activeConfig(ctx context.Context, r bus.Reader) (*configs.Config, error) {
	mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
	if bus.IsNotFound(err) {
		return nil, nil
	}

	if err != nil {
		return nil, err
	}

	return mc.TypedSpec().Config, nil
}

// nextConfig waits for the controller's next event and reads the active
// config then (nil before one is applied); done says the controller is
// stopping. Every controller here reconciles from the config this way.
func nextConfig(ctx context.Context, r bus.ControllerRuntime) (cfg *configs.Config, done bool, err error) {
	select {
	case <-ctx.Done():
		return nil, true, nil
	case <-r.EventCh():
	}

	cfg, err = activeConfig(ctx, r)

	return cfg, false, err
}

// ControlPlaneController turns the config of a control-plane node into
// the three components' configs (Talos's ControlPlane*Controller): what
// the static pods are built from, and what `get apiserverconfig` shows.
type ControlPlaneController struct{}

// Name implements bus.Controller.
func (ControlPlaneController) Name() string { return "k8s.ControlPlaneController" }

// Inputs implements bus.Controller.
func (ControlPlaneController) Inputs() []bus.Input { return []bus.Input{machineConfigInput} }

// Outputs implements bus.Controller.
func (ControlPlaneController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.APIServerConfigType}, {Type: k8s.ControllerManagerConfigType}, {Type: k8s.SchedulerConfigType}, {Type: v1alpha1.BootstrapStatusType}}
}

// Run implements bus.Controller.
func (c ControlPlaneController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		want := map[string]map[string]k8s.ComponentConfigSpec{k8s.APIServerConfigType: {}, k8s.ControllerManagerConfigType: {}, k8s.SchedulerConfigType: {}}
		bs := map[string]v1alpha1.BootstrapStatusSpec{}

		if cfg != nil && cfg.IsControlPlane() {
			specs, err := render.ComponentConfigs(cfg)
			if err != nil {
				r.Logger().Error("control plane config", "error", err)
				continue
			}

			want[k8s.APIServerConfigType][k8s.APIServerID] = specs[k8s.APIServerID]
			want[k8s.ControllerManagerConfigType][k8s.ControllerManagerID] = specs[k8s.ControllerManagerID]
			want[k8s.SchedulerConfigType][k8s.SchedulerID] = specs[k8s.SchedulerID]
			bs[v1alpha1.BootstrapStatusID] = v1alpha1.BootstrapStatusSpec{}
		}

		var errs []error
		for typ, specs := range want {
			errs = append(errs, bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceControlPlane, typ, specs))
		}

		errs = append(errs, bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, v1alpha1.BootstrapStatusType, bs))

		if err := errors.Join(errs...); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
