package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/dm"
	"github.com/talosbox/talosbox/internal/luks2"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// Opening STATE and EPHEMERAL for mounting: plain, or LUKS2 mapped through
// dm-crypt, with a VolumeStatus saying which and how it went.

// mappedName is the dm-crypt mapping of a partition, as Talos names it.
func mappedName(dev disk.BlockDevice) string { return dev.Name + "-encrypted" }

// openVolume makes the partition dev ready to mount and returns the path
// to mount: the partition itself, or its dm-crypt mapping when it is (or,
// empty, is to be) encrypted with ec. An empty partition is formatted.
// The outcome, failures included, is published as the label's
// VolumeStatus.
func (v *Volumes) openVolume(ctx context.Context, dev disk.BlockDevice, label string, ec *configs.EncryptionConfig, w io.Writer) (string, error) {
	st := block.VolumeStatusSpec{Phase: block.PhaseReady, Type: "partition", Location: dev.Path, ParentLocation: "/dev/" + dev.Disk,
		Size: dev.Size, PrettySize: humanize.Bytes(uint64(dev.Size)), Filesystem: disk.FSExt4, MountLocation: dev.Path}

	path, err := v.openVolumeAs(dev, label, ec, &st, w)
	if err != nil {
		st.Phase, st.ErrorMessage = block.PhaseFailed, err.Error()
	}

	v.publishVolumeStatus(ctx, label, st)

	return path, err
}

func (v *Volumes) openVolumeAs(dev disk.BlockDevice, label string, ec *configs.EncryptionConfig, st *block.VolumeStatusSpec, w io.Writer) (string, error) {
	f, err := disk.OpenExclusive(dev.Path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", label, err)
	}

	found, err := disk.Probe(disk.Region{File: f, Size: dev.Size})
	f.Close()

	if err != nil {
		return "", fmt.Errorf("%s: %w", label, err)
	}

	switch {
	case found == disk.ProbeLUKS && ec == nil:
		return "", fmt.Errorf("%s (%s) is encrypted (LUKS2) but no encryption is configured for it (machine.systemDiskEncryption.%s); "+
			"to use it unencrypted, wipe it: talosctl reset --system-labels-to-wipe %s", label, dev.Path, configKey(label), label)
	case found == disk.ProbeLUKS, found == "" && ec != nil:
		return v.openEncrypted(dev, label, ec, found == "", st, w)
	case ec != nil:
		fmt.Fprintf(w, "[talos] %s (%s) holds %s and is not encrypted, although machine.systemDiskEncryption.%s is set: "+
			"it is used as it is; to encrypt it, wipe it (talosctl reset --system-labels-to-wipe %s)\n", label, dev.Path, found, configKey(label), label)

		st.ErrorMessage = "not encrypted: the volume was made before encryption was configured"
	}

	formatted, err := disk.EnsureFilesystem(dev, disk.FSExt4)
	if err != nil {
		return "", err
	}

	if formatted {
		fmt.Fprintf(w, "[talos] %s (%s) was empty: formatted it %s\n", dev.PartName, dev.Path, disk.FSExt4)
	}

	return dev.Path, nil
}

func configKey(label string) string {
	if label == disk.LabelState {
		return "state"
	}

	return "ephemeral"
}

// openEncrypted formats (when empty) or unlocks the LUKS2 volume on dev,
// syncs its key slots with ec, maps it and makes sure the mapping holds
// a filesystem.
func (v *Volumes) openEncrypted(dev disk.BlockDevice, label string, ec *configs.EncryptionConfig, empty bool, st *block.VolumeStatusSpec, w io.Writer) (string, error) {
	st.EncryptionProvider = "luks2"
	for _, k := range ec.Keys {
		st.ConfiguredEncryptionKeys = append(st.ConfiguredEncryptionKeys, strconv.Itoa(k.Slot))
	}

	keys, err := volumeKeys(ec, label, machineUUID(v.opts.SysRoot))
	if err != nil {
		return "", keyError{err}
	}
	defer zeroKeys(keys)

	f, err := os.OpenFile(dev.Path, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %w", label, err)
	}
	defer f.Close()

	kdf := nodePBKDF()
	start := time.Now()

	var (
		vk     []byte
		opened volumeKey
	)

	if empty {
		if vk, err = formatVolume(f, ec, keys, label, kdf); err != nil {
			return "", err
		}

		fmt.Fprintf(w, "[talos] %s (%s) was empty: encrypted it with luks2 (key slots %s) in %s\n",
			label, dev.Path, joinInts(slotsOf(keys)), time.Since(start).Round(time.Millisecond))
	} else {
		if vk, opened, err = unlockVolume(f, keys, label); err != nil {
			return "", keyError{err}
		}

		fmt.Fprintf(w, "[talos] unlocked %s (%s) with key %s in %s\n", label, dev.Path, opened, time.Since(start).Round(time.Millisecond))

		s := syncKeys(f, vk, opened, keys, kdf)
		if msg := s.String(); msg != "" {
			fmt.Fprintf(w, "[talos] %s key sync: %s\n", label, msg)
		}

		st.EncryptionFailedSyncs = s.Failed
	}
	defer clear(vk)

	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("%s: %w", label, err)
	}

	mapped, err := dm.MapLUKS2(dev.Path, mappedName(dev), vk, ec.Options...)
	if err != nil {
		return "", fmt.Errorf("%s: %w", label, err)
	}

	st.MountLocation = mapped

	mdev, err := mappedDevice(mapped, label)
	if err != nil {
		return "", err
	}

	formatted, err := disk.EnsureFilesystem(mdev, disk.FSExt4)
	if err != nil {
		return "", err
	}

	if formatted {
		fmt.Fprintf(w, "[talos] %s (%s) was empty: formatted it %s\n", label, mapped, disk.FSExt4)
	}

	return mapped, nil
}

// mappedDevice describes a dm-crypt mapping for EnsureFilesystem.
func mappedDevice(path, label string) (disk.BlockDevice, error) {
	f, err := os.Open(path)
	if err != nil {
		return disk.BlockDevice{}, fmt.Errorf("%s: %w", label, err)
	}
	defer f.Close()

	size, err := disk.Size(f)
	if err != nil {
		return disk.BlockDevice{}, fmt.Errorf("%s: %w", label, err)
	}

	return disk.BlockDevice{Name: filepath.Base(path), PartName: label, Path: path, Size: size}, nil
}

// closeVolume removes the label's dm-crypt mapping, if it has one, after
// its filesystem was unmounted.
func (v *Volumes) closeVolume(ctx context.Context, dev disk.BlockDevice, label string, w io.Writer) error {
	name := mappedName(dev)
	if _, err := os.Stat(filepath.Join("/dev/mapper", name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}

	if err := dm.CloseLUKS2(name); err != nil {
		return fmt.Errorf("close %s: %w", label, err)
	}

	fmt.Fprintf(w, "[talos] closed %s (/dev/mapper/%s)\n", label, name)

	v.publishVolumeStatus(ctx, label, block.VolumeStatusSpec{Phase: block.PhaseClosed, Type: "partition", Location: dev.Path,
		Size: dev.Size, PrettySize: humanize.Bytes(uint64(dev.Size)), EncryptionProvider: "luks2"})

	return nil
}

func (v *Volumes) publishVolumeStatus(ctx context.Context, label string, spec block.VolumeStatusSpec) {
	_, err := v.opts.Store.Modify(ctx, bus.NewTyped(runtime.NamespaceRuntime, block.VolumeStatusType, label, block.VolumeStatusSpec{}), func(r bus.Resource) error {
		*r.(*block.VolumeStatus).TypedSpec() = spec //nolint:forcetypeassert
		return nil
	}, bus.WithOwner(v.opts.Owner))
	if err != nil {
		v.logf("volume status %s: %v", label, err)
	}
}

// stateEncryption is STATE's encryption config as META holds it (tag
// 0x09): nil when META has none.
func (v *Volumes) stateEncryption() (*configs.EncryptionConfig, error) {
	v.meta.mu.Lock()
	path := v.meta.path
	v.meta.mu.Unlock()

	if path == "" {
		return nil, nil
	}

	m, _, err := meta.Edit(path, nil)
	if err != nil {
		return nil, err
	}

	b, ok := m.ReadTag(meta.StateEncryptionConfig)
	if !ok {
		return nil, nil
	}

	return decodeStateEncryption(b)
}

// RecordStateEncryption keeps META's copy of STATE's encryption config in
// step with cfg, so that the next boot opens STATE (and syncs its keys)
// as the config says. A config without one leaves an encrypted STATE's
// record alone: STATE stays encrypted until it is wiped, and must open.
func (v *Volumes) RecordStateEncryption(ctx context.Context, cfg *configs.Config) error {
	if !v.HasMeta() {
		return nil
	}

	var ec *configs.EncryptionConfig
	if cfg.Machine != nil && cfg.Machine.SystemDiskEncryption != nil {
		ec = cfg.Machine.SystemDiskEncryption.State
	}

	if ec == nil {
		return nil
	}

	b, err := encodeStateEncryption(ec)
	if err != nil {
		return err
	}

	_, err = v.editMeta(ctx, func(m *meta.Meta) error {
		_, err := m.SetTag(meta.StateEncryptionConfig, b)
		return err
	})

	return err
}

// keyError: no configured key opens the volume, or a key cannot be
// derived. For STATE that leaves the node in maintenance mode rather
// than failing the boot: it stays reachable, and nothing on STATE is
// touched.
type keyError struct{ err error }

func (e keyError) Error() string { return e.err.Error() }
func (e keyError) Unwrap() error { return e.err }

// errStateLocked: STATE exists but could not be opened; an install must
// not partition over it.
var errStateLocked = errors.New("STATE cannot be opened")

// eraseLUKS destroys a LUKS2 volume's header copies and key slots (all
// that precedes the data segment), as cryptsetup luksErase does, so that
// no key that leaks later unlocks the old data. A partition without a
// LUKS2 header is left to disk.WipeDevice.
func eraseLUKS(dev disk.BlockDevice) error {
	f, err := disk.OpenExclusive(dev.Path)
	if err != nil {
		return err
	}
	defer f.Close()

	end := uint64(luks2.DefaultDataOffset)

	h, err := luks2.ReadHeader(f)

	switch {
	case errors.Is(err, luks2.ErrNotLUKS2):
		return nil
	case err == nil:
		if seg, err := h.Segment(); err == nil && seg.Offset > 0 {
			end = seg.Offset
		}
	}

	end = min(end, uint64(dev.Size))
	zero := make([]byte, 1<<20)

	for off := uint64(0); off < end; off += uint64(len(zero)) {
		if _, err := f.WriteAt(zero[:min(uint64(len(zero)), end-off)], int64(off)); err != nil {
			return err
		}
	}

	return f.Sync()
}
