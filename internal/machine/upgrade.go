package machine

// OS upgrades: an installer image written to the other boot slot, GRUB
// pointed at it with the running slot as its fallback, META's Upgrade tag
// saying which slot to go back to; the tag is dropped once the new version
// runs, and a boot that fails fatally before that reverts by itself.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/installer"
	"github.com/talosbox/talosbox/internal/meta"
)

// ErrUpgradeUnsupported is Upgrade's and Rollback's answer on a platform
// that does not boot from its own disk.
var ErrUpgradeUnsupported = errors.New("upgrade is not supported on this platform")

// ErrUpgradeInProgress is Upgrade's answer while another one runs.
var ErrUpgradeInProgress = errors.New("another upgrade is in progress on this node")

// errRebootNow ends a boot sequence that must reboot before anything else
// runs (a staged upgrade was just installed).
var errRebootNow = errors.New("reboot into the staged upgrade")

// UpgradeOptions are talosctl upgrade's, as the node uses them.
type UpgradeOptions struct {
	Image string
	// Stage records the image in META and installs it at the next boot,
	// before anything uses the disk.
	Stage bool
	// Log gets the progress lines the console gets.
	Log io.Writer
}

// UpgradeResult says what an upgrade installed.
type UpgradeResult struct {
	Label, Previous, Version string
}

// Upgrade pulls the installer image and installs it into the slot that is
// not running; the caller reboots the node into it. Nothing the node boots
// changes unless the whole image was written (a missing image, one that is
// not an installer, a full BOOT are errors that leave the node as it was).
func (n *Node) Upgrade(ctx context.Context, o UpgradeOptions) (UpgradeResult, error) {
	sysDisk, err := n.upgradable("upgrade")
	if err != nil {
		return UpgradeResult{}, err
	}

	if o.Image == "" {
		return UpgradeResult{}, errors.New("upgrade: no installer image given (--image)")
	}

	if !n.upgradeMu.TryLock() {
		return UpgradeResult{}, ErrUpgradeInProgress
	}
	defer n.upgradeMu.Unlock()

	w := n.console
	if o.Log != nil {
		w = io.MultiWriter(n.console, o.Log)
	}

	cfg := n.activeConfig()

	if o.Stage {
		if _, err := installer.Pull(ctx, o.Image, registries(cfg), w); err != nil {
			return UpgradeResult{}, err
		}

		if err := n.MetaWrite(ctx, meta.StagedUpgradeImageRef, []byte(o.Image)); err != nil {
			return UpgradeResult{}, fmt.Errorf("stage the upgrade: %w", err)
		}

		fmt.Fprintf(w, "[talos] staged the upgrade to %s: it is installed at the next boot\n", o.Image)

		return UpgradeResult{}, nil
	}

	return n.installUpgrade(ctx, sysDisk, o.Image, cfg, w)
}

func (n *Node) installUpgrade(ctx context.Context, sysDisk, image string, cfg *configs.Config, w io.Writer) (UpgradeResult, error) {
	res, err := n.volumes.WriteBootSlot(ctx, sysDisk, image, cfg, w)
	if err != nil {
		return UpgradeResult{}, fmt.Errorf("upgrade: %w", err)
	}

	if res.Previous != "" {
		if err := n.MetaWrite(ctx, meta.Upgrade, []byte(res.Previous)); err != nil {
			return UpgradeResult{}, fmt.Errorf("upgrade: record the fallback in META: %w", err)
		}
	}

	fmt.Fprintf(w, "[talos] upgrade: %s is installed in %s; %s is the fallback until it runs\n", res.Version, res.Label, orNone(res.Previous))

	return UpgradeResult(res), nil
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}

	return s
}

// upgradable returns the system disk of a node that boots from its own
// disk, or why it cannot be upgraded.
func (n *Node) upgradable(op string) (string, error) {
	if !n.opts.Platform.IsMetal() {
		return "", fmt.Errorf("%w (%s): a %s node runs the image it was created from; to upgrade it, create it again from a newer image "+
			"(talosctl cluster create --image ...)", ErrUpgradeUnsupported, n.opts.Platform.Name, n.opts.Platform.Name)
	}

	d := n.systemDisk()
	if d == "" {
		return "", fmt.Errorf("%s: the node is not installed (no system disk): install it first (apply-config in maintenance mode)", op)
	}

	return d, nil
}

func (n *Node) activeConfig() *configs.Config {
	cfg, _ := n.currentConfig()
	if cfg == nil {
		return &configs.Config{}
	}

	return cfg
}

func registries(cfg *configs.Config) *configs.RegistriesConfig {
	if cfg.Machine == nil {
		return nil
	}

	return cfg.Machine.Registries
}

// Rollback makes GRUB boot the previous installation again; the caller
// reboots.
func (n *Node) Rollback(ctx context.Context) (string, error) {
	sysDisk, err := n.upgradable("rollback")
	if err != nil {
		return "", err
	}

	if !n.upgradeMu.TryLock() {
		return "", ErrUpgradeInProgress
	}
	defer n.upgradeMu.Unlock()

	label, err := n.volumes.RevertBoot(sysDisk)
	if err != nil {
		return "", fmt.Errorf("rollback: %w", err)
	}

	if _, err := n.MetaDelete(ctx, meta.Upgrade); err != nil {
		return "", fmt.Errorf("rollback: %w", err)
	}

	fmt.Fprintf(n.console, "[talos] rollback: %s boots next\n", label)

	return label, nil
}

// RevertFailedUpgrade is what PID 1 does after a fatal boot error: if the
// boot was the first of an upgrade (META's Upgrade tag names the slot it
// came from), GRUB is pointed back at that slot and the tag dropped;
// reverted says the caller should reboot.
func (n *Node) RevertFailedUpgrade(ctx context.Context) (reverted bool, err error) {
	prev, ok := n.volumes.MetaTag(meta.Upgrade)
	if !ok || len(prev) == 0 {
		return false, nil
	}

	sysDisk := n.systemDisk()
	if sysDisk == "" {
		return false, errors.New("revert the failed upgrade: the system disk was not found")
	}

	fmt.Fprintf(n.console, "[talos] reverting failed upgrade, switching to %q\n", prev)

	label, err := n.volumes.RevertBoot(sysDisk)
	if err != nil {
		return false, fmt.Errorf("revert the failed upgrade: %w", err)
	}

	if label != string(prev) {
		return false, fmt.Errorf("revert the failed upgrade: GRUB's fallback is %s, META says %s", label, prev)
	}

	if _, err := n.MetaDelete(ctx, meta.Upgrade); err != nil {
		return false, fmt.Errorf("revert the failed upgrade: %w", err)
	}

	return true, nil
}

// dropUpgradeFallback forgets the slot an upgrade came from once the new
// version runs: a later fatal error is no longer the upgrade's.
func (n *Node) dropUpgradeFallback(ctx context.Context, w io.Writer) {
	if prev, ok := n.volumes.MetaTag(meta.Upgrade); ok {
		if _, err := n.MetaDelete(ctx, meta.Upgrade); err != nil {
			fmt.Fprintf(w, "[talos] removing fallback entry: %v\n", err)
			return
		}

		fmt.Fprintf(w, "[talos] removing fallback entry: the upgrade runs (it came from %s)\n", prev)
	}
}

// applyStagedUpgrade installs an upgrade staged in META, then ends the boot
// so that the node reboots into it. The tag is deleted first: a staged
// image that cannot be installed is reported once, not retried forever.
func (n *Node) applyStagedUpgrade(cfg *configs.Config) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		image, ok := n.volumes.MetaTag(meta.StagedUpgradeImageRef)
		if !ok {
			return nil
		}

		if _, err := n.MetaDelete(ctx, meta.StagedUpgradeImageRef); err != nil {
			return err
		}

		fmt.Fprintf(w, "[talos] staged upgrade via %s\n", image)

		var err error

		// The network may come up after this boot reached here.
		for attempt := 1; attempt <= 5; attempt++ {
			if _, err = n.installUpgrade(ctx, n.systemDisk(), string(image), cfg, w); err == nil {
				return errRebootNow
			}

			fmt.Fprintf(w, "[talos] staged upgrade, attempt %d: %v\n", attempt, err)

			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(3 * time.Second):
			}
		}

		fmt.Fprintf(w, "[talos] the staged upgrade to %s failed; the node boots what it has: %v\n", image, err)

		return nil
	}
}
