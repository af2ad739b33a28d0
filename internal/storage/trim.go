package storage

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// trimmedVolumes are the system volumes a trim schedule applies to: as on
// Talos, EPHEMERAL (STATE is small and rarely written).
var trimmedVolumes = []string{disk.LabelEphemeral}

// TrimController trims the filesystems of the mounted system volumes on
// the schedule the machine config sets (FilesystemTrimConfig, a
// VolumeConfig's trim section), as Talos's volume trim controllers do:
// once every interval, at a moment within it that the node's identity and
// the volume decide, so that the nodes of a cluster and the volumes of a
// node do not all trim at once, and that stays the same across reboots.
// The moment due when the controller starts is skipped, so a reboot does
// not trim again. A volume not mounted, or encrypted without
// allow_discards, is passed over.
type TrimController struct {
	Volumes *Volumes
	// NodeID is the node's identity, which seeds the schedule (the node
	// makes it at its first boot; until then the seed is empty).
	NodeID func() (string, error)

	// handled is, per volume, the schedule it follows and its last slot
	// handled.
	handled map[string]trimSlot
}

type trimSlot struct {
	interval     time.Duration
	anchor, slot time.Time
}

// Name implements bus.Controller.
func (*TrimController) Name() string { return "block.VolumeTrimController" }

// Inputs implements bus.Controller: the config, and the volumes' status
// (a volume opened or closed).
func (*TrimController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: config.NamespaceConfig, Type: config.MachineConfigType},
		{Namespace: runtime.NamespaceRuntime, Type: block.VolumeStatusType},
	}
}

// Outputs implements bus.Controller.
func (*TrimController) Outputs() []bus.Output { return nil }

// Run implements bus.Controller.
func (c *TrimController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-timer.C:
		}

		mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
		if err != nil && !bus.IsNotFound(err) {
			return fmt.Errorf("machine config: %w", err)
		}

		var cfg *configs.Config
		if mc != nil {
			cfg = mc.TypedSpec().Config
		}

		due, next := c.due(cfg, time.Now())

		for _, label := range due {
			c.trim(r, cfg, label)
		}

		timer.Stop()

		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Second))
		}

		r.ResetRestartBackoff()
	}
}

// due lists the volumes whose slot has come since the last one handled,
// marking it handled, and says when the next slot of any volume comes
// (zero when none is scheduled).
func (c *TrimController) due(cfg *configs.Config, now time.Time) (due []string, next time.Time) {
	if c.handled == nil {
		c.handled = map[string]trimSlot{}
	}

	var node string
	if c.NodeID != nil {
		node, _ = c.NodeID() //nolint:errcheck // no identity yet: the empty seed
	}

	for _, label := range trimmedVolumes {
		interval := configs.TrimInterval(cfg, label)
		if interval <= 0 {
			delete(c.handled, label)

			continue
		}

		anchor := time.Unix(0, int64(scheduleOffset(node+"/"+label, interval)))
		slot := slotBefore(anchor, interval, now)

		if n := slot.Add(interval); next.IsZero() || n.Before(next) {
			next = n
		}

		last, seen := c.handled[label]
		c.handled[label] = trimSlot{interval: interval, anchor: anchor, slot: slot}

		// A schedule first seen (at start, or changed) starts with the
		// next slot.
		if !seen || last.interval != interval || !last.anchor.Equal(anchor) || !last.slot.Before(slot) {
			continue
		}

		due = append(due, label)
	}

	return due, next
}

func (c *TrimController) trim(r bus.ControllerRuntime, cfg *configs.Config, label string) {
	log := r.Logger().With("volume", label)

	target, encrypted, ok := c.Volumes.mounted(label)

	switch {
	case !ok:
		log.Debug("skipping trim, volume is not mounted")

		return
	case encrypted && !allowsDiscards(cfg, label):
		log.Debug("skipping trim, volume is encrypted without allow_discards")

		return
	}

	trimmed, err := disk.Trim(target)

	switch {
	case errors.Is(err, disk.ErrTrimUnsupported):
		log.Warn("trim not supported for volume", "target", target)
	case err != nil:
		log.Error("trim failed", "target", target, "error", err)
	default:
		log.Info("trimmed volume", "target", target, "trimmed", humanize.Bytes(trimmed))
	}
}

// allowsDiscards says whether the volume's dm-crypt mapping passes
// discards down (machine.systemDiskEncryption's allow_discards option).
func allowsDiscards(cfg *configs.Config, label string) bool {
	if cfg == nil || cfg.Machine == nil || cfg.Machine.SystemDiskEncryption == nil {
		return false
	}

	ec := cfg.Machine.SystemDiskEncryption.Ephemeral
	if label == disk.LabelState {
		ec = cfg.Machine.SystemDiskEncryption.State
	}

	return ec != nil && slices.Contains(ec.Options, "allow_discards")
}

// mounted says where the system volume label is mounted, and whether
// through a dm-crypt mapping.
func (v *Volumes) mounted(label string) (target string, encrypted, ok bool) {
	switch label {
	case disk.LabelEphemeral:
		target = v.opts.Platform.EphemeralDir
	case disk.LabelState:
		target = v.opts.Platform.StateDir
	default:
		return "", false, false
	}

	v.mu.Lock()
	defer v.mu.Unlock()

	_, encrypted = v.crypted[label]

	return target, encrypted, slices.Contains(v.mounts, target)
}

// scheduleOffset is where in each interval the slots of seed fall: a
// hash of it, so stable across reboots and spread across nodes and
// volumes (Talos's ScheduleOffset).
func scheduleOffset(seed string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(seed)) //nolint:errcheck // hashes never fail

	return time.Duration(h.Sum64() % uint64(interval))
}

// slotBefore is the latest slot at or before t of the lattice anchor +
// k*interval.
func slotBefore(anchor time.Time, interval time.Duration, t time.Time) time.Time {
	diff := t.UnixNano() - anchor.UnixNano()

	k := diff / int64(interval)
	if diff%int64(interval) < 0 {
		k--
	}

	return anchor.Add(time.Duration(k) * interval)
}
