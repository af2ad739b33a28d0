package storage

// The system disk on metal: STATE and EPHEMERAL found, made and mounted,
// unmounted on the way down and wiped on reset. Container mode keeps both
// as plain directories and never comes here.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/disk"
)

// Mount flags: neither volume holds device nodes or setuid programs;
// STATE holds no programs at all. EPHEMERAL's VolumeConfig may say
// otherwise (ephemeralFlags).
const (
	stateMountFlags     = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME
	ephemeralMountFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME
)

// SystemDisk returns the disk (vda) holding STATE, "" before an install.
func (v *Volumes) SystemDisk() string {
	v.mu.Lock()
	defer v.mu.Unlock()

	return v.sysDisk
}

// MountState mounts STATE at the state dir when a disk has one, so that
// the identity and the config persisted there are read from it; an
// encrypted STATE is opened with the keys META records for it. A STATE a
// reset wiped is left empty until a config says how to make it. Without
// one the node is not installed: its state lives in the tmpfs under
// /system until a config names the install disk. A STATE that cannot be
// opened (a wrong key) is reported and left: the node goes on in memory,
// into maintenance mode, where the API answers.
func (v *Volumes) MountState(ctx context.Context, w io.Writer) error {
	devs, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		return err
	}

	st, ok := disk.FindPartition(devs, "", disk.LabelState)
	if !ok {
		fmt.Fprintf(w, "[talos] no %s partition: not installed yet; state stays in memory until a config names the install disk (disks: %s)\n",
			disk.LabelState, disk.Describe(disk.Disks(devs)))

		return nil
	}

	v.growEphemeral(devs, st.Disk, w)

	ec, err := v.stateEncryption()
	if err != nil {
		err = keyError{err}
	}

	if err == nil && ec == nil {
		var empty bool
		if empty, err = isEmpty(st); err == nil && empty {
			fmt.Fprintf(w, "[talos] %s (%s) is empty: it is made when a config arrives\n", disk.LabelState, st.Path)

			v.mu.Lock()
			v.sysDisk, v.stateEmpty = st.Disk, true
			v.mu.Unlock()

			return nil
		}
	}

	if err == nil {
		err = v.mountVolume(ctx, st, disk.LabelState, ec, v.opts.Platform.StateDir, stateMountFlags, 0o700, w)
	}

	// Anything but a key problem (a foreign filesystem, I/O) fails the
	// boot, as it always has: only keys have a remedy from maintenance.
	if ke := (keyError{}); err != nil && !errors.As(err, &ke) {
		return err
	}

	if err != nil {
		fmt.Fprintf(w, "[talos] %s (%s) cannot be used: %v; the node runs from memory, in maintenance mode, and will not install over it\n",
			disk.LabelState, st.Path, err)

		v.mu.Lock()
		v.stateErr = fmt.Errorf("%w (%s): %w; the node will not install over it", errStateLocked, st.Path, err)
		v.mu.Unlock()

		return nil
	}

	v.mu.Lock()
	v.sysDisk = st.Disk
	v.mu.Unlock()

	return nil
}

// growEphemeral lets a disk image fill the disk it was written to: while
// EPHEMERAL is still empty (never formatted, or wiped by a reset), the
// GPT is fitted to the disk and EPHEMERAL, the last partition, grows to
// its end, so a node booted from metal-amd64.raw on a disk of any size
// gets all of it, as Talos's image does. A formatted EPHEMERAL is never
// moved. A failure is reported and the node goes on with the partition
// as it was. STATE, before EPHEMERAL, does not move.
func (v *Volumes) growEphemeral(devs []disk.BlockDevice, sysDisk string, w io.Writer) {
	eph, ok := disk.FindPartition(devs, sysDisk, disk.LabelEphemeral)
	if !ok {
		return
	}

	if empty, err := isEmpty(eph); err != nil || !empty {
		return
	}

	i := slices.IndexFunc(devs, func(d disk.BlockDevice) bool { return d.Name == sysDisk && !d.IsPartition() })
	if i < 0 {
		return
	}

	g, err := disk.GrowLast(devs[i].Path, disk.LabelEphemeral)
	if err != nil {
		fmt.Fprintf(w, "[talos] %s keeps its size (%s): %v\n", disk.LabelEphemeral, humanize.IBytes(uint64(eph.Size)), err)
		return
	}

	if !g.Moved {
		return
	}

	now, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		fmt.Fprintf(w, "[talos] %s: %v\n", sysDisk, err)
		return
	}

	grown, _ := disk.FindPartition(now, sysDisk, disk.LabelEphemeral)
	fmt.Fprintf(w, "[talos] fitted the partition table to %s (%s): %s grew from %s to %s\n", sysDisk, humanize.IBytes(uint64(devs[i].Size)),
		disk.LabelEphemeral, humanize.IBytes(uint64(eph.Size)), humanize.IBytes(uint64(grown.Size)))

	if need := ephemeralMinSize(); uint64(grown.Size) < need {
		fmt.Fprintf(w, "[talos] warning: %s is %s, less than the %s a node needs for its containers: give the machine a bigger disk\n",
			disk.LabelEphemeral, humanize.IBytes(uint64(grown.Size)), humanize.IBytes(need))
	}
}

// ephemeralMinSize is what the system layout asks of EPHEMERAL.
func ephemeralMinSize() uint64 {
	for _, s := range disk.SystemLayout {
		if s.Label == disk.LabelEphemeral {
			return s.MinSize
		}
	}

	return 0
}

// isEmpty says whether a partition holds no filesystem or LUKS header.
func isEmpty(dev disk.BlockDevice) (bool, error) {
	f, err := os.Open(dev.Path)
	if err != nil {
		return false, err
	}
	defer f.Close()

	found, err := disk.Probe(disk.Region{File: f, Size: dev.Size})

	return found == "", err
}

// mountVolume opens dev (openVolume: formatted when empty, unlocked when
// encrypted) and mounts it at target, whose root gets mode (a new
// filesystem's root is 0755; STATE holds keys).
func (v *Volumes) mountVolume(ctx context.Context, dev disk.BlockDevice, label string, ec *configs.EncryptionConfig, target string,
	flags uintptr, mode os.FileMode, w io.Writer,
) error {
	path, err := v.openVolume(ctx, dev, label, ec, w)
	if err != nil {
		return err
	}

	v.trackMapping(label, dev, path)

	if err := disk.Mount(path, target, flags); err != nil {
		return err
	}

	if err := os.Chmod(target, mode); err != nil {
		return fmt.Errorf("mount %s: %w", label, err)
	}

	v.mu.Lock()
	v.mounts = append(v.mounts, target)
	v.mu.Unlock()

	fmt.Fprintf(w, "[talos] mounted %s (%s) at %s\n", label, path, target)

	return nil
}

// trackMapping remembers an opened dm-crypt mapping, to close it when
// the volume is unmounted or wiped.
func (v *Volumes) trackMapping(label string, dev disk.BlockDevice, path string) {
	if path == dev.Path {
		return
	}

	v.mu.Lock()
	defer v.mu.Unlock()

	if v.crypted == nil {
		v.crypted = map[string]disk.BlockDevice{}
	}

	v.crypted[label] = dev
}

// MountEphemeral mounts EPHEMERAL of the system disk at /var, encrypted
// as cfg says.
func (v *Volumes) MountEphemeral(cfg *configs.Config) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		devs, err := disk.Scan(v.opts.SysRoot)
		if err != nil {
			return err
		}

		eph, ok := disk.FindPartition(devs, v.SystemDisk(), disk.LabelEphemeral)
		if !ok {
			return fmt.Errorf("the system disk %s has no %s partition", v.SystemDisk(), disk.LabelEphemeral)
		}

		var ec *configs.EncryptionConfig
		if cfg.Machine != nil && cfg.Machine.SystemDiskEncryption != nil {
			ec = cfg.Machine.SystemDiskEncryption.Ephemeral
		}

		return v.mountVolume(ctx, eph, disk.LabelEphemeral, ec, v.opts.Platform.EphemeralDir, ephemeralFlags(cfg), 0o755, w)
	}
}

// ephemeralFlags are EPHEMERAL's mount flags as its VolumeConfig says:
// nosuid and nodev unless mount.secure is false (as on Talos), noatime
// unless mount.disableAccessTime is false.
func ephemeralFlags(cfg *configs.Config) uintptr {
	vc := configs.SystemVolumeConfig(cfg, configs.VolumeEphemeral)

	var flags uintptr

	if vc.MountSecure() {
		flags |= unix.MS_NOSUID | unix.MS_NODEV
	}

	if vc.MountNoAccessTime(ephemeralMountFlags&unix.MS_NOATIME != 0) {
		flags |= unix.MS_NOATIME
	}

	return flags
}

// UnmountSystem unmounts the volumes, last mounted first. A volume that
// stays busy is reported and left: the caller syncs before the machine
// goes down, and the journal covers the rest.
func (v *Volumes) UnmountSystem(ctx context.Context, w io.Writer) error {
	v.mu.Lock()
	mounts := v.mounts
	v.mounts = nil
	v.mu.Unlock()

	for i := len(mounts) - 1; i >= 0; i-- {
		if err := disk.UnmountTree(mounts[i]); err != nil {
			fmt.Fprintf(w, "[talos] %v\n", err)
			continue
		}

		fmt.Fprintf(w, "[talos] unmounted %s\n", mounts[i])
	}

	v.closeMappings(ctx, w)

	return nil
}

// closeMappings closes the dm-crypt mappings whose volumes are unmounted.
func (v *Volumes) closeMappings(ctx context.Context, w io.Writer, labels ...string) {
	v.mu.Lock()
	crypted := maps.Clone(v.crypted)
	v.mu.Unlock()

	for label, dev := range crypted {
		if len(labels) > 0 && !slices.Contains(labels, label) {
			continue
		}

		if err := v.closeVolume(ctx, dev, label, w); err != nil {
			fmt.Fprintf(w, "[talos] %v\n", err)
			continue
		}

		v.mu.Lock()
		delete(v.crypted, label)
		v.mu.Unlock()
	}
}

// WipeVolume wipes a system label on metal: the volume is unmounted, then
// its signature is removed, so that the next boot formats it afresh.
// Before an install there is no partition: the in-memory dir is emptied.
func (v *Volumes) WipeVolume(ctx context.Context, label, dir string, w io.Writer) error {
	sysDisk := v.SystemDisk()
	if sysDisk == "" {
		return Wipe(dir)
	}

	devs, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		return err
	}

	dev, ok := disk.FindPartition(devs, sysDisk, label)
	if !ok {
		return fmt.Errorf("wipe %s: no such partition on %s", label, sysDisk)
	}

	if err := disk.UnmountTree(dir); err != nil {
		return fmt.Errorf("wipe %s: %w", label, err)
	}

	v.mu.Lock()
	kept := v.mounts[:0]
	for _, m := range v.mounts {
		if m != dir {
			kept = append(kept, m)
		}
	}
	v.mounts = kept
	v.mu.Unlock()

	v.closeMappings(ctx, w, label)

	if err := eraseLUKS(dev); err != nil {
		return fmt.Errorf("wipe %s: %w", label, err)
	}

	if err := disk.WipeDevice(dev); err != nil {
		return err
	}

	fmt.Fprintf(w, "[talos] wiped %s (%s)\n", label, dev.Path)

	return nil
}
