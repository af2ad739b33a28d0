package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// ApplyMode is how a new config takes effect.
type ApplyMode string

// Apply modes; Talos 0.9's --immediate is no-reboot and --on-reboot is staged.
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
	Mode    ApplyMode
	Message string
	// Diff lists what the config changes, one configs.Change a line;
	// empty when it means the same as the running one.
	Diff     string
	Warnings []string
}

// ErrRebootRequired is wrapped by a no-reboot (or try) apply that changes
// fields a running node cannot change.
var ErrRebootRequired = errors.New("changes cannot be applied without a reboot")

// ApplyConfiguration validates data and applies it in the given mode. In
// maintenance mode (no config yet) the config is persisted and the boot
// continues with it, whatever the mode.
//
// The config is decoded once; that one parsed config is compared with the
// running one, persisted and published. The comparison is by meaning (see
// configs.Compare), so a config that only differs in layout, comments, key
// order or spelled-out defaults is a no-op in every mode: nothing is
// written, published or rebooted.
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

	// One apply at a time: each compares with the config the previous one
	// left running.
	n.applyMu.Lock()
	defer n.applyMu.Unlock()

	cur, curData := n.currentConfig()

	n.mu.Lock()
	pending := n.tryTimer != nil || n.staged
	n.mu.Unlock()

	changes, err := configs.Compare(cur, cfg)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply config: %w", err)
	}

	res := ApplyResult{Mode: opts.Mode, Warnings: warnings, Diff: formatChanges(changes)}

	if cur == nil {
		return n.applyInMaintenance(ctx, loadedConfig{cfg: cfg, data: data, source: "apply-config (maintenance mode)"}, opts, res)
	}

	// Nothing differs and nothing waits to be confirmed or booted into:
	// whatever the mode, there is nothing to do. A config that means the
	// same but is written differently (a setting moved into a typed
	// document) is kept, so the node shows what was applied.
	differs := len(changes) > 0 || !configs.SameWritten(cur, cfg)
	if !differs && !pending {
		return unchanged(res, opts.DryRun), nil
	}

	needReboot := RebootRequired(changes)

	switch {
	case res.Mode == ModeAuto && len(needReboot) > 0:
		res.Mode = ModeReboot
	case res.Mode == ModeAuto, res.Mode == ModeReboot && len(changes) == 0:
		// A reboot into the config already running changes nothing.
		res.Mode = ModeNoReboot
	}

	if (res.Mode == ModeNoReboot || res.Mode == ModeTry) && len(needReboot) > 0 {
		names := make([]string, len(needReboot))
		for i, p := range needReboot {
			names[i] = p.String()
		}

		return ApplyResult{}, fmt.Errorf("apply config: %w: %s", ErrRebootRequired, strings.Join(names, ", "))
	}

	if opts.DryRun {
		res.Message = fmt.Sprintf("Dry run summary:\nApplied configuration in %s mode (dry run, nothing changed); %d field(s) differ.", res.Mode, len(changes))
		return res, nil
	}

	next := loadedConfig{cfg: cfg, data: data, source: "apply-config"}

	switch res.Mode {
	case ModeNoReboot:
		if err := n.commit(ctx, next, differs); err != nil {
			return ApplyResult{}, err
		}

		res.Message = "Applied configuration without a reboot"
	case ModeReboot:
		if err := n.stage(next, differs); err != nil {
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
		if err := n.stage(next, differs); err != nil {
			return ApplyResult{}, err
		}

		res.Message = "Staged configuration to be applied after a reboot"
	case ModeTry:
		timeout := opts.TryTimeout
		if timeout <= 0 {
			timeout = DefaultTryTimeout
		}

		if err := n.applyTry(ctx, next, loadedConfig{cfg: cur, data: curData, source: "the config before the try"}, timeout); err != nil {
			return ApplyResult{}, err
		}

		res.Message = fmt.Sprintf("Applied configuration in try mode: it reverts in %s unless confirmed by another apply", timeout)
	}

	return res, nil
}

// unchanged answers an apply of the config already running.
func unchanged(res ApplyResult, dryRun bool) ApplyResult {
	if res.Mode == ModeAuto || res.Mode == ModeReboot {
		res.Mode = ModeNoReboot
	}

	res.Message = "Applied configuration without a reboot: no changes, the node already runs this configuration"
	if dryRun {
		res.Message = "Dry run summary:\nNo changes: the node already runs this configuration."
	}

	return res
}

// formatChanges is the dry-run diff: one change per line.
func formatChanges(changes []configs.Change) string {
	var sb strings.Builder

	for _, c := range changes {
		sb.WriteString(c.String())
		sb.WriteByte('\n')
	}

	return sb.String()
}

// loadedConfig is a config with the text it was decoded from: the text is
// what is persisted and shown, the parsed config what the node acts on.
type loadedConfig struct {
	cfg  *configs.Config
	data []byte
	// source says where the config came from, for messages.
	source string
}

func (n *Node) validate(data []byte) (*configs.Config, []string, error) {
	cfg, warnings, err := n.load(data)
	if err != nil {
		return cfg, warnings, err
	}

	// A node that is not installed yet must be able to install with it.
	return cfg, warnings, n.volumes.CheckInstallable(cfg)
}

func (n *Node) inMaintenance() bool {
	st, err := bus.GetAs[*runtime.MachineStage](context.Background(), n.store, bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStageType, ID: runtime.MachineID})

	return err == nil && st.TypedSpec().Stage == runtime.StageMaintenance
}

func (n *Node) applyInMaintenance(ctx context.Context, next loadedConfig, opts ApplyOptions, res ApplyResult) (ApplyResult, error) {
	if !n.inMaintenance() {
		return ApplyResult{}, errors.New("apply config: the node is booting; try again once it is running or in maintenance mode")
	}

	if opts.DryRun {
		res.Message = "Dry run summary:\nThe node is in maintenance mode: it would boot with this configuration."
		return res, nil
	}

	if _, err := n.persist(next); err != nil {
		return ApplyResult{}, err
	}

	select {
	case n.offered <- next:
	case <-ctx.Done():
		return ApplyResult{}, fmt.Errorf("apply config: %w", ctx.Err())
	}

	res.Mode = ModeNoReboot
	res.Message = "Applied configuration: leaving maintenance mode and booting"

	return res, nil
}

// persist writes the config to STATE unless it opts out with persist:
// false, and says whether it did.
func (n *Node) persist(next loadedConfig) (bool, error) {
	if !next.cfg.Persist {
		return false, nil
	}

	if err := n.state.SaveConfig(next.data); err != nil {
		return false, fmt.Errorf("apply config: %w", err)
	}

	// The next boot opens STATE before it reads this config: META
	// carries STATE's keys over.
	if err := n.volumes.RecordStateEncryption(context.Background(), next.cfg); err != nil {
		return true, fmt.Errorf("apply config: record the STATE encryption config in META: %w", err)
	}

	return true, nil
}

// stage persists a config for the next boot. Staging the running config
// again undoes an earlier stage.
func (n *Node) stage(next loadedConfig, differs bool) error {
	saved, err := n.persist(next)
	if err != nil || !saved {
		return err
	}

	n.mu.Lock()
	n.staged = differs
	n.mu.Unlock()

	return nil
}

// commit persists and activates a config; it also confirms a pending try.
// A config equal to the running one is not published again: controllers
// would reconcile to where they are.
func (n *Node) commit(ctx context.Context, next loadedConfig, differs bool) error {
	saved, err := n.persist(next)
	if err != nil {
		return err
	}

	n.mu.Lock()
	n.cancelTryLocked()

	if saved {
		n.staged = false
	}
	n.mu.Unlock()

	if !differs {
		return nil
	}

	return n.publish(ctx, next)
}

// applyTry activates next in memory only, and restores what ran before
// (cur, or what ran before the first of consecutive tries) after timeout
// unless another apply confirms or replaces it first. The revert is the
// node's own: it needs no client, so a try that cuts the node off its
// clients (a new machine.ca, a network without the address they use)
// undoes itself.
func (n *Node) applyTry(ctx context.Context, next, cur loadedConfig, timeout time.Duration) error {
	n.mu.Lock()
	prev := cur
	if n.tryTimer != nil {
		// A try on a try: reverting to the first try would keep a config
		// nobody confirmed for good.
		prev = n.tryPrev
	}
	n.mu.Unlock()

	if err := n.publish(ctx, next); err != nil {
		return err
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	if n.tryTimer != nil {
		n.tryTimer.Stop()
	}

	n.tryPrev = prev

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

// publish makes next the active config: the MachineConfig resource gets a
// new version, and controllers reconcile from it.
func (n *Node) publish(ctx context.Context, next loadedConfig) error {
	_, err := n.store.Modify(ctx, bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{}), func(r bus.Resource) error {
		spec := r.(*config.MachineConfig).TypedSpec() //nolint:forcetypeassert // our own type
		spec.Config, spec.YAML = next.cfg, string(next.data)

		return nil
	}, bus.WithOwner(owner))
	if err != nil {
		return fmt.Errorf("publish config: %w", err)
	}

	return nil
}

// ActiveConfig returns the config in effect, nil before one is applied.
func (n *Node) ActiveConfig() []byte {
	_, data := n.currentConfig()

	return data
}

// Config is the config in effect, nil before one is applied. Callers
// must not modify it.
func (n *Node) Config() *configs.Config {
	cfg, _ := n.currentConfig()

	return cfg
}

// currentConfig reads the config in effect from its MachineConfig
// resource, the node's one copy: nil before one is applied.
func (n *Node) currentConfig() (*configs.Config, []byte) {
	mc, err := bus.GetAs[*config.MachineConfig](context.Background(), n.store, activeConfigPtr)
	if err != nil {
		return nil, nil
	}

	spec := mc.TypedSpec()

	return spec.Config, []byte(spec.YAML)
}

// forgetConfig removes the config in effect from the bus: the node has
// none until the next boot or apply.
func (n *Node) forgetConfig(ctx context.Context) error {
	err := n.store.Destroy(ctx, activeConfigPtr, bus.WithOwner(owner))
	if err != nil && !bus.IsNotFound(err) {
		return fmt.Errorf("forget config: %w", err)
	}

	return nil
}

var activeConfigPtr = bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID}
