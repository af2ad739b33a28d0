package k8s

import (
	"context"
	"errors"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
)

var machineConfigInput = bus.Input{Namespace: machine.NamespaceConfig, Type: machine.MachineConfigType}

// activeConfig is the config in effect, nil before there is one.
func activeConfig(ctx context.Context, r bus.Reader) (*configs.Config, error) {
	mc, err := bus.GetAs[*machine.MachineConfig](ctx, r, bus.Pointer{Namespace: machine.NamespaceConfig, Type: machine.MachineConfigType, ID: machine.ActiveConfigID})
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
	return []bus.Output{{Type: APIServerConfigType}, {Type: ControllerManagerConfigType}, {Type: SchedulerConfigType}, {Type: BootstrapStatusType}}
}

// Run implements bus.Controller.
func (c ControlPlaneController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		want := map[string]map[string]ComponentConfigSpec{APIServerConfigType: {}, ControllerManagerConfigType: {}, SchedulerConfigType: {}}
		bs := map[string]BootstrapStatusSpec{}

		if cfg != nil && cfg.IsControlPlane() {
			specs, err := ComponentConfigs(cfg)
			if err != nil {
				r.Logger().Error("control plane config", "error", err)
				continue
			}

			want[APIServerConfigType][APIServerID] = specs[APIServerID]
			want[ControllerManagerConfigType][ControllerManagerID] = specs[ControllerManagerID]
			want[SchedulerConfigType][SchedulerID] = specs[SchedulerID]
			bs[BootstrapStatusID] = BootstrapStatusSpec{}
		}

		var errs []error
		for typ, specs := range want {
			errs = append(errs, bus.SyncOutputs(ctx, r, c.Name(), NamespaceControlPlane, typ, specs))
		}

		errs = append(errs, bus.SyncOutputs(ctx, r, c.Name(), NamespaceRuntime, BootstrapStatusType, bs))

		if err := errors.Join(errs...); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
