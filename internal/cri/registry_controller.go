package cri

import (
	"context"
	"fmt"
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/cri"
)

// RegistryController renders the CRI's registry mirrors whenever the
// machine config changes: containerd reads the hosts tree at every pull,
// so a mirror edited with apply-config or patch takes effect without a
// reboot. (Credentials live in cri.toml, read at containerd's start; as
// on Talos, changing them needs a reboot.)
type RegistryController struct {
	Containerd *Containerd
}

// Name implements bus.Controller.
func (*RegistryController) Name() string { return "cri.RegistryController" }

// Inputs implements bus.Controller.
func (*RegistryController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: config.NamespaceConfig, Type: config.MachineConfigType}}
}

// Outputs implements bus.Controller.
func (*RegistryController) Outputs() []bus.Output {
	return []bus.Output{{Type: cri.RegistriesConfigType}}
}

// Run implements bus.Controller.
func (c *RegistryController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
		if bus.IsNotFound(err) {
			continue
		}

		if err != nil {
			return fmt.Errorf("machine config: %w", err)
		}

		cfg := mc.TypedSpec().Config

		// The runtime's directories exist once the services were prepared;
		// before that the boot renders everything itself.
		if c.Containerd.Prepared() {
			if err := c.Containerd.Render(cfg); err != nil {
				r.Logger().Error("render CRI registry config", "error", err)
				continue
			}
		}

		var spec cri.RegistriesConfigSpec
		if cfg.Machine != nil && cfg.Machine.Registries != nil {
			spec.Mirrors, spec.Config = cfg.Machine.Registries.Mirrors, cfg.Machine.Registries.Config

			for h := range spec.Mirrors {
				spec.Hosts = append(spec.Hosts, h)
			}

			slices.Sort(spec.Hosts)
		}

		if _, err := bus.ModifyAs(ctx, r, bus.NewTyped(cri.NamespaceCRI, cri.RegistriesConfigType, cri.RegistriesConfigID, cri.RegistriesConfigSpec{}), func(res *cri.RegistriesConfig) error {
			*res.TypedSpec() = spec
			return nil
		}); err != nil {
			return fmt.Errorf("registries config: %w", err)
		}

		r.ResetRestartBackoff()
	}
}
