package watchdog

import (
	"context"
	"fmt"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// Controller runs the watchdog of the machine config's
// WatchdogTimerConfig and publishes its WatchdogTimerStatus. A device it
// cannot open or set up fails the controller, which the runtime restarts
// with its backoff (as in Talos).
type Controller struct{}

// Name implements bus.Controller.
func (*Controller) Name() string { return "runtime.WatchdogTimerController" }

// Inputs implements bus.Controller.
func (*Controller) Inputs() []bus.Input {
	return []bus.Input{{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID}}
}

// Outputs implements bus.Controller.
func (*Controller) Outputs() []bus.Output {
	return []bus.Output{{Type: runtime.WatchdogTimerStatusType}}
}

// FeedInterval is how often a watchdog of this timeout is fed: three
// times per timeout, as in Talos.
func FeedInterval(timeout time.Duration) time.Duration { return timeout / 3 }

// Run implements bus.Controller.
func (c *Controller) Run(ctx context.Context, r bus.ControllerRuntime) error {
	var (
		wd     *Timer
		ticker *time.Ticker
		tick   <-chan time.Time
	)

	stop := func() {
		if ticker != nil {
			ticker.Stop()
			ticker, tick = nil, nil
		}

		if wd != nil {
			r.Logger().Info("closing hardware watchdog", "path", wd.Path())

			if err := wd.Close(); err != nil {
				r.Logger().Error("close hardware watchdog", "path", wd.Path(), "error", err)
			}

			wd = nil
		}
	}

	defer stop()

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			if err := wd.Feed(); err != nil {
				return err
			}

			continue
		case <-r.EventCh():
		}

		cfg, err := c.config(ctx, r)
		if err != nil {
			return err
		}

		want := map[string]runtime.WatchdogTimerStatusSpec{}

		if cfg == nil {
			stop()
		} else {
			if wd != nil && wd.Path() != cfg.Device {
				stop()
			}

			if wd == nil {
				if wd, err = Open(cfg.Device); err != nil {
					return err
				}

				r.Logger().Info("opened hardware watchdog", "path", cfg.Device)
			}

			timeout, err := wd.SetTimeout(cfg.EffectiveTimeout())
			if err != nil {
				return err
			}

			interval := FeedInterval(timeout)

			if ticker != nil {
				ticker.Stop()
			}

			ticker = time.NewTicker(interval)
			tick = ticker.C

			if err := wd.Feed(); err != nil {
				return err
			}

			r.Logger().Info("set hardware watchdog timeout", "timeout", timeout, "feedInterval", interval)

			want[runtime.WatchdogTimerStatusID] = runtime.WatchdogTimerStatusSpec{Device: cfg.Device, Timeout: timeout, FeedInterval: interval}
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, runtime.WatchdogTimerStatusType, want); err != nil {
			return fmt.Errorf("watchdog status: %w", err)
		}

		r.ResetRestartBackoff()
	}
}

// config reads the WatchdogTimerConfig of the active config, nil for none.
func (c *Controller) config(ctx context.Context, r bus.ControllerRuntime) (*configs.WatchdogTimerConfig, error) {
	mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
	if bus.IsNotFound(err) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("machine config: %w", err)
	}

	return configs.DocumentOf[*configs.WatchdogTimerConfig](mc.TypedSpec().Config), nil
}
