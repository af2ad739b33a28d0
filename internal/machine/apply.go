package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// ApplyMode is how a new config takes effect.
type ApplyMode string

// Apply modes; the seeds' --immediate is no-reboot and --on-reboot is staged.
const (
	ModeAuto     ApplyMode = "auto"
	ModeNoReboot ApplyMode = "no-reboot"
	ModeReboot   ApplyMode = "reboot"
	ModeStaged   ApplyMode = "staged"
	ModeTry      ApplyMode = "try"
)

// DefaultTryTimeout is how long a "try" apply lasts unless confirmed.
const DefaultTryTimeout = time.Minute

// ParseApplyMode accepts the mode names.
func ParseApplyMode(s string) (ApplyMode, error) {
	switch m := ApplyMode(s); m {
	case ModeAuto, ModeNoReboot, ModeReboot, ModeStaged, ModeTry:
		return m, nil
	}

	return "", fmt.Errorf("unknown apply mode %q: use auto, no-reboot, reboot, staged or try", s)
}

// ApplyOptions are apply-config's.
type ApplyOptions struct {
	Mode       ApplyMode
	DryRun     bool
	TryTimeout time.Duration
}

// ApplyResult says what an apply did.
type ApplyResult struct {
	// Mode is the mode that took effect (auto resolves to no-reboot or reboot).
	Mode     ApplyMode
	Message  string
	Diff     string
	Warnings []string
}

// ErrRebootRequired is wrapped by a no-reboot (or try) apply that changes
// fields a running node cannot change.
var ErrRebootRequired = errors.New("changes cannot be applied without a reboot")

// ApplyConfiguration validates data and applies it in the given mode. In
// maintenance mode (no config yet) the config is persisted and the boot
// continues with it, whatever the mode.
func (n *Node) ApplyConfiguration(ctx context.Context, data []byte, opts ApplyOptions) (ApplyResult, error) {
	if opts.Mode == "" {
		opts.Mode = ModeAuto
	}

	cfg, warnings, err := n.validate(data)
	if err != nil {
		if n.inMaintenance() {
			n.recordLoadError(ctx, "apply-config", err)
		}

		return ApplyResult{}, fmt.Errorf("apply config: %w", err)
	}

	n.mu.Lock()
	cur := n.active
	n.mu.Unlock()

	res := ApplyResult{Mode: opts.Mode, Warnings: warnings, Diff: configs.DiffYAML(cur, data)}

	if cur == nil {
		return n.applyInMaintenance(ctx, cfg, data, opts, res)
	}

	changed, err := ChangedPaths(cur, data)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply config: %w", err)
	}

	needReboot := RebootRequired(changed)

	if res.Mode == ModeAuto {
		res.Mode = ModeNoReboot
		if len(needReboot) > 0 {
			res.Mode = ModeReboot
		}
	}

	if (res.Mode == ModeNoReboot || res.Mode == ModeTry) && len(needReboot) > 0 {
		names := make([]string, len(needReboot))
		for i, p := range needReboot {
			names[i] = p.String()
		}

		return ApplyResult{}, fmt.Errorf("apply config: %w: %s", ErrRebootRequired, strings.Join(names, ", "))
	}

	if opts.DryRun {
		res.Message = fmt.Sprintf("Dry run summary:\nApplied configuration in %s mode (dry run, nothing changed); %d field(s) differ.", res.Mode, len(changed))
		return res, nil
	}

	switch res.Mode {
	case ModeNoReboot:
		if err := n.commit(ctx, cfg, data); err != nil {
			return ApplyResult{}, err
		}

		res.Message = "Applied configuration without a reboot"
	case ModeReboot:
		if err := n.persist(cfg, data); err != nil {
			return ApplyResult{}, err
		}

		res.Message = "Applied configuration with a reboot"

		// The caller gets its answer before the services stop.
		go func() {
			if err := n.Reboot(context.WithoutCancel(ctx)); err != nil {
				n.logf("reboot after apply: %v", err)
			}
		}()
	case ModeStaged:
		if err := n.persist(cfg, data); err != nil {
			return ApplyResult{}, err
		}

		res.Message = "Staged configuration to be applied after a reboot"
	case ModeTry:
		timeout := opts.TryTimeout
		if timeout <= 0 {
			timeout = DefaultTryTimeout
		}

		if err := n.applyTry(ctx, data, cur, timeout); err != nil {
			return ApplyResult{}, err
		}

		res.Message = fmt.Sprintf("Applied configuration in try mode: it reverts in %s unless confirmed by another apply", timeout)
	}

	return res, nil
}

func (n *Node) validate(data []byte) (*configs.Config, []string, error) {
	cfg, err := configs.Decode(data)
	if err != nil {
		return nil, nil, err
	}

	warnings, err := cfg.Validate(n.mode())
	if err != nil {
		return cfg, warnings, err
	}

	// A node that is not installed yet must be able to install with it.
	return cfg, warnings, n.checkInstallable(cfg)
}

func (n *Node) inMaintenance() bool {
	st, err := bus.GetAs[*MachineStage](context.Background(), n.store, bus.Pointer{Namespace: NamespaceRuntime, Type: MachineStageType, ID: MachineID})

	return err == nil && st.TypedSpec().Stage == StageMaintenance
}

func (n *Node) applyInMaintenance(ctx context.Context, cfg *configs.Config, data []byte, opts ApplyOptions, res ApplyResult) (ApplyResult, error) {
	if !n.inMaintenance() {
		return ApplyResult{}, errors.New("apply config: the node is booting; try again once it is running or in maintenance mode")
	}

	if opts.DryRun {
		res.Message = "Dry run summary:\nThe node is in maintenance mode: it would boot with this configuration."
		return res, nil
	}

	if err := n.persist(cfg, data); err != nil {
		return ApplyResult{}, err
	}

	select {
	case n.offered <- data:
	case <-ctx.Done():
		return ApplyResult{}, fmt.Errorf("apply config: %w", ctx.Err())
	}

	res.Mode = ModeNoReboot
	res.Message = "Applied configuration: leaving maintenance mode and booting"

	return res, nil
}

// persist writes the config to STATE unless it opts out with persist: false.
func (n *Node) persist(cfg *configs.Config, data []byte) error {
	if !cfg.Persist {
		return nil
	}

	return n.state.SaveConfig(data)
}

// commit persists and activates a config; it also confirms a pending try.
func (n *Node) commit(ctx context.Context, cfg *configs.Config, data []byte) error {
	if err := n.persist(cfg, data); err != nil {
		return err
	}

	n.mu.Lock()
	n.cancelTryLocked()
	n.mu.Unlock()

	return n.publish(ctx, data)
}

// try activates data in memory only, and restores prev after timeout
// unless another apply confirms or replaces it first.
func (n *Node) applyTry(ctx context.Context, data, prev []byte, timeout time.Duration) error {
	if err := n.publish(ctx, data); err != nil {
		return err
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	if n.tryTimer != nil {
		n.tryTimer.Stop()
	}

	var t *time.Timer

	t = time.AfterFunc(timeout, func() {
		n.mu.Lock()
		current := n.tryTimer == t
		if current {
			n.tryTimer = nil
		}
		n.mu.Unlock()

		if !current {
			return
		}

		n.logf("try mode: no confirmation within %s, reverting the configuration", timeout)

		if err := n.publish(context.Background(), prev); err != nil {
			n.logf("try mode: revert failed: %v", err)
		}
	})
	n.tryTimer = t

	return nil
}

// TryPending reports whether a "try" apply is waiting to be confirmed or
// reverted.
func (n *Node) TryPending() bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.tryTimer != nil
}

func (n *Node) cancelTryLocked() {
	if n.tryTimer != nil {
		n.tryTimer.Stop()
		n.tryTimer = nil
	}
}

// publish makes data the active config: the MachineConfig resource gets a
// new version, and controllers reconcile from it.
func (n *Node) publish(ctx context.Context, data []byte) error {
	cfg, err := configs.Decode(data)
	if err != nil {
		return err
	}

	n.mu.Lock()
	n.active = data
	n.mu.Unlock()

	_, err = n.store.Modify(ctx, bus.NewTyped(NamespaceConfig, MachineConfigType, ActiveConfigID, MachineConfigSpec{}), func(r bus.Resource) error {
		spec := r.(*MachineConfig).TypedSpec() //nolint:forcetypeassert // our own type
		spec.Config, spec.YAML = cfg, string(data)

		return nil
	}, bus.WithOwner(owner))

	return err
}

// ActiveConfig returns the config in effect, nil before one is applied.
func (n *Node) ActiveConfig() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.active
}
