package storage

// The install: the system disk chosen, partitioned, and STATE made on it
// (encrypted when the config says so), with the in-memory state moved in.

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/diskexpr"
	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/platform"
)

// installTarget picks the disk an install writes to: the first disk the
// config's UnattendedInstallConfig expression matches, else the disk its
// machine.install.diskSelector matches, else its machine.install.disk,
// else talosbox.install.disk= from the kernel command line, else the first
// virtio disk (the first disk otherwise). It checks that EPHEMERAL's
// VolumeConfig selector matches the disk and that the layout fits, so
// that a config naming a wrong disk is refused before the node leaves
// maintenance mode.
func (v *Volumes) installTarget(cfg *configs.Config) (disk.BlockDevice, error) {
	devs, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		return disk.BlockDevice{}, err
	}

	d, err := v.chooseInstallDisk(cfg, devs)
	if err != nil {
		return disk.BlockDevice{}, err
	}

	if err := v.checkEphemeralSelector(cfg, d); err != nil {
		return disk.BlockDevice{}, err
	}

	if _, err := disk.Plan(systemLayout(cfg), d.Size); err != nil {
		return disk.BlockDevice{}, fmt.Errorf("install disk %s: %w", d.Path, err)
	}

	return d, nil
}

func (v *Volumes) chooseInstallDisk(cfg *configs.Config, devs []disk.BlockDevice) (disk.BlockDevice, error) {
	if u := configs.DocumentOf[*configs.UnattendedInstallConfig](cfg); u != nil {
		sel, err := u.Selector()
		if err != nil {
			return disk.BlockDevice{}, fmt.Errorf("%s: %w", unattendedSelector, err)
		}

		// Without an expression (refused by validation on metal) the
		// v1alpha1 fields and the defaults choose.
		if sel != nil {
			return v.matchInstallDisk(sel, disk.Disks(devs))
		}
	}

	want := ""

	var sel *configs.InstallDiskSelector

	if cfg.Machine != nil && cfg.Machine.Install != nil {
		want, sel = cfg.Machine.Install.Disk, cfg.Machine.Install.DiskSelector
	}

	// The selector wins over a disk path, as in Talos.
	if sel != nil {
		return disk.SelectDisk(devs, disk.Selector{Size: sel.Size, Name: sel.Name, Model: sel.Model, Serial: sel.Serial,
			Modalias: sel.Modalias, UUID: sel.UUID, WWID: sel.WWID, Type: sel.Type, BusPath: sel.BusPath})
	}

	if want == "" {
		want, _ = v.opts.Cmdline().Get(platform.ParamInstallDisk)
	}

	return disk.ChooseDisk(devs, want)
}

// unattendedSelector names the install disk expression in messages.
const unattendedSelector = "UnattendedInstallConfig's provisioning.diskSelector.match"

// matchInstallDisk is the first of disks sel matches, as Talos takes the
// first disk its expression matches. Before the install no disk is the
// system disk.
func (v *Volumes) matchInstallDisk(sel *diskexpr.Expr, disks []disk.BlockDevice) (disk.BlockDevice, error) {
	for _, d := range disks {
		ok, err := sel.Match(v.diskEnv(d))
		if err != nil {
			return disk.BlockDevice{}, fmt.Errorf("%s: %w", unattendedSelector, err)
		}

		if ok {
			return d, nil
		}
	}

	return disk.BlockDevice{}, fmt.Errorf("%s: %w", unattendedSelector, noDisk(sel, disks, nil))
}

// checkEphemeralSelector refuses an install disk that EPHEMERAL's
// VolumeConfig selector does not match: talosbox makes EPHEMERAL on the
// system disk, which the install disk is about to be.
func (v *Volumes) checkEphemeralSelector(cfg *configs.Config, d disk.BlockDevice) error {
	const what = `VolumeConfig "EPHEMERAL" provisioning.diskSelector.match`

	sel, err := configs.SystemVolumeConfig(cfg, configs.VolumeEphemeral).Selector()
	if sel == nil && err == nil {
		return nil
	}

	ok := false

	if err == nil {
		env := v.diskEnv(d)
		env.SystemDisk = true
		ok, err = sel.Match(env)
	}

	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case !ok:
		return fmt.Errorf("install disk %s (%s): %s %s does not match it, and talosbox makes EPHEMERAL on the system disk: "+
			"write a selector the install disk matches (system_disk), or choose another install disk", d.Path, describeDisk(d), what, sel)
	}

	return nil
}

// CheckInstallable refuses, on a metal node that is not installed yet, a
// config whose install disk cannot take the system.
func (v *Volumes) CheckInstallable(cfg *configs.Config) error {
	v.mu.Lock()
	stateErr := v.stateErr
	v.mu.Unlock()

	if stateErr != nil {
		return stateErr
	}

	if !v.opts.Platform.IsMetal() || v.SystemDisk() != "" {
		return nil
	}

	_, err := v.installTarget(cfg)

	return err
}

// InstallSystemDisk partitions and formats the install disk on the first
// boot with a config, then moves what the in-memory state dir holds (the
// node identity, the applied config) onto the new STATE. A STATE a reset
// left empty is made the same way, without partitioning. STATE is
// encrypted when the config says so, and META records how.
func (v *Volumes) InstallSystemDisk(cfg *configs.Config) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		v.mu.Lock()
		stateErr, empty := v.stateErr, v.stateEmpty
		v.mu.Unlock()

		if stateErr != nil {
			return stateErr
		}

		if v.SystemDisk() != "" && !empty {
			return nil
		}

		if v.SystemDisk() == "" {
			// Disks behind drivers that probe asynchronously (AHCI, NVMe) may
			// show up after the first look: an installed disk found now is
			// mounted, never partitioned again.
			if err := v.MountState(ctx, io.Discard); err != nil {
				return err
			}

			v.mu.Lock()
			stateErr, empty = v.stateErr, v.stateEmpty
			v.mu.Unlock()

			if stateErr != nil {
				return stateErr
			}

			if d := v.SystemDisk(); d != "" && !empty {
				fmt.Fprintf(w, "[talos] found the %s partition on %s: already installed\n", disk.LabelState, d)
				return nil
			}
		}

		target := v.SystemDisk()
		fresh := target == ""

		if target == "" {
			d, err := v.installTarget(cfg)
			if err != nil {
				return err
			}

			fmt.Fprintf(w, "[talos] installing the system partitions on %s\n", d.Path)

			if _, err := disk.Install(d.Path, systemLayout(cfg), w); err != nil {
				return err
			}

			target = d.Name
		}

		devs, err := disk.Scan(v.opts.SysRoot)
		if err != nil {
			return err
		}

		st, ok := disk.FindPartition(devs, target, disk.LabelState)
		if !ok {
			return fmt.Errorf("install to %s: the kernel shows no %s partition after the install", target, disk.LabelState)
		}

		// META first: it must say how STATE is encrypted before STATE is.
		if !v.HasMeta() {
			if err := v.LoadMeta(ctx, w); err != nil {
				return err
			}
		}

		if err := v.RecordStateEncryption(ctx, cfg); err != nil {
			return fmt.Errorf("record the STATE encryption config in META: %w", err)
		}

		var ec *configs.EncryptionConfig
		if cfg.Machine != nil && cfg.Machine.SystemDiskEncryption != nil {
			ec = cfg.Machine.SystemDiskEncryption.State
		}

		path, err := v.openVolume(ctx, st, disk.LabelState, ec, w)
		if err != nil {
			return err
		}

		v.trackMapping(disk.LabelState, st, path)

		if err := v.moveStateTo(path, w); err != nil {
			return err
		}

		v.mu.Lock()
		v.sysDisk, v.stateEmpty = target, false
		v.mu.Unlock()

		if fresh {
			v.installBoot(ctx, target, cfg, w)
		}

		return nil
	}
}

// installBoot writes the installer image onto BOOT after a fresh install.
// The node runs on without it (it booted from a kernel it was given, and
// can boot so again), so a failure is reported, not fatal.
func (v *Volumes) installBoot(ctx context.Context, sysDisk string, cfg *configs.Config, w io.Writer) {
	var ref string

	if cfg.Machine != nil && cfg.Machine.Install != nil {
		in := cfg.Machine.Install
		if in.Bootloader != nil && !*in.Bootloader {
			fmt.Fprintln(w, "[talos] machine.install.bootloader is false: BOOT is left empty")
			return
		}

		ref = in.Image
	}

	res, err := v.WriteBootSlot(ctx, sysDisk, ref, cfg, w)
	if err != nil {
		fmt.Fprintf(w, "[talos] BOOT is not written, so this disk cannot boot by itself (only from a kernel it is given): %v\n", err)
		return
	}

	fmt.Fprintf(w, "[talos] installed %s on %s: the disk boots by itself (GRUB, entry %s)\n", res.Version, sysDisk, res.Label)
}

// systemLayout is disk.SystemLayout with the volumes cfg encrypts left
// empty (they are encrypted when first opened, and only an empty volume
// is ever encrypted), and EPHEMERAL at least as big as its VolumeConfig's
// provisioning.minSize asks.
func systemLayout(cfg *configs.Config) []disk.PartitionSpec {
	layout := slices.Clone(disk.SystemLayout)

	if minSize := configs.SystemVolumeConfig(cfg, configs.VolumeEphemeral).MinSize(); minSize > 0 {
		for i, p := range layout {
			if p.Label == disk.LabelEphemeral {
				layout[i].MinSize = max(p.MinSize, minSize)
			}
		}
	}

	if cfg.Machine == nil || cfg.Machine.SystemDiskEncryption == nil {
		return layout
	}

	enc := cfg.Machine.SystemDiskEncryption

	for i, p := range layout {
		if (p.Label == disk.LabelState && enc.State != nil) || (p.Label == disk.LabelEphemeral && enc.Ephemeral != nil) {
			layout[i].FS = disk.FSNone
		}
	}

	return layout
}

// moveStateTo mounts STATE on a staging directory, copies the in-memory
// state dir into it and moves the mount over the state dir.
func (v *Volumes) moveStateTo(path string, w io.Writer) error {
	staging := filepath.Join(filepath.Dir(v.opts.Platform.StateDir), ".state-install")

	if err := disk.Mount(path, staging, stateMountFlags); err != nil {
		return err
	}

	if err := copyDir(staging, v.opts.Platform.StateDir); err != nil {
		disk.Unmount(staging) //nolint:errcheck // the copy error is the one to report

		return fmt.Errorf("copy the state to %s: %w", disk.LabelState, err)
	}

	if err := os.Chmod(staging, 0o700); err != nil {
		return fmt.Errorf("copy the state to %s: %w", disk.LabelState, err)
	}

	if err := os.MkdirAll(v.opts.Platform.StateDir, 0o700); err != nil {
		return err
	}

	if err := unix.Mount(staging, v.opts.Platform.StateDir, "", unix.MS_MOVE, ""); err != nil {
		disk.Unmount(staging) //nolint:errcheck // the move error is the one to report

		return fmt.Errorf("move %s to %s: %w", disk.LabelState, v.opts.Platform.StateDir, err)
	}

	v.mu.Lock()
	v.mounts = append(v.mounts, v.opts.Platform.StateDir)
	v.mu.Unlock()

	fmt.Fprintf(w, "[talos] mounted %s (%s) at %s\n", disk.LabelState, path, v.opts.Platform.StateDir)

	return os.Remove(staging)
}

// copyDir copies the regular files and directories under src into dst,
// keeping their permission bits (the state holds private keys).
func copyDir(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}

		info, err := d.Info()
		if err != nil {
			return err
		}

		to := filepath.Join(dst, rel)

		switch {
		case d.IsDir():
			if rel == "." {
				return nil
			}

			return os.Mkdir(to, info.Mode().Perm())
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}

			return atomicfile.Write(to, data, info.Mode().Perm())
		}

		return nil // sockets and links are recreated by their owners
	})
}
