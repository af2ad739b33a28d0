package machine

// The system disk on metal: STATE and EPHEMERAL found, made and mounted,
// unmounted on the way down and wiped on reset. Container mode keeps both
// as plain directories and never comes here.

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/platform"
)

// sysRoot is where sysfs is mounted on metal (Node.sysRoot's default).
const sysRoot = "/sys"

// Mount flags: neither volume holds device nodes or setuid programs;
// STATE holds no programs at all.
const (
	stateMountFlags     = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME
	ephemeralMountFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME
)

// systemDisk returns the disk (vda) holding STATE, "" before an install.
func (n *Node) systemDisk() string {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.sysDisk
}

// mountState mounts STATE at the state dir when a disk has one, so that
// the identity and the config persisted there are read from it. A STATE a
// reset wiped is formatted again first. Without one the node is not
// installed: its state lives in the tmpfs under /system until a config
// names the install disk.
func (n *Node) mountState(_ context.Context, w io.Writer) error {
	devs, err := disk.Scan(n.sysRoot)
	if err != nil {
		return err
	}

	st, ok := disk.FindPartition(devs, "", disk.LabelState)
	if !ok {
		fmt.Fprintf(w, "[talos] no %s partition: not installed yet; state stays in memory until a config names the install disk (disks: %s)\n",
			disk.LabelState, disk.Describe(disk.Disks(devs)))

		return nil
	}

	if err := n.mountVolume(st, n.state.Dir, stateMountFlags, 0o700, w); err != nil {
		return err
	}

	n.mu.Lock()
	n.sysDisk = st.Disk
	n.mu.Unlock()

	return nil
}

// mountVolume formats dev when it is empty and mounts it at target, whose
// root gets mode (a new filesystem's root is 0755; STATE holds keys).
func (n *Node) mountVolume(dev disk.BlockDevice, target string, flags uintptr, mode os.FileMode, w io.Writer) error {
	formatted, err := disk.EnsureFilesystem(dev, disk.FSExt4)
	if err != nil {
		return err
	}

	if formatted {
		fmt.Fprintf(w, "[talos] %s (%s) was empty: formatted it %s\n", dev.PartName, dev.Path, disk.FSExt4)
	}

	if err := disk.Mount(dev.Path, target, flags); err != nil {
		return err
	}

	if err := os.Chmod(target, mode); err != nil {
		return fmt.Errorf("mount %s: %w", dev.PartName, err)
	}

	n.mu.Lock()
	n.mounts = append(n.mounts, target)
	n.mu.Unlock()

	fmt.Fprintf(w, "[talos] mounted %s (%s) at %s\n", dev.PartName, dev.Path, target)

	return nil
}

// installTarget picks the disk an install writes to: the disk the config's
// machine.install.diskSelector matches, else its machine.install.disk, else talosbox.install.disk= from the kernel
// command line, else the first virtio disk (the first disk otherwise).
// It checks that the layout fits, so that a config naming a wrong disk is
// refused before the node leaves maintenance mode.
func (n *Node) installTarget(cfg *configs.Config) (disk.BlockDevice, error) {
	want := ""

	var sel *configs.InstallDiskSelector

	if cfg.Machine != nil && cfg.Machine.Install != nil {
		want, sel = cfg.Machine.Install.Disk, cfg.Machine.Install.DiskSelector
	}

	if want == "" {
		want, _ = n.cmdline.Get(platform.ParamInstallDisk)
	}

	devs, err := disk.Scan(n.sysRoot)
	if err != nil {
		return disk.BlockDevice{}, err
	}

	var d disk.BlockDevice

	// The selector wins over a disk path, as in Talos.
	if sel != nil {
		d, err = disk.SelectDisk(devs, disk.Selector{Size: sel.Size, Name: sel.Name, Model: sel.Model, Serial: sel.Serial,
			Modalias: sel.Modalias, UUID: sel.UUID, WWID: sel.WWID, Type: sel.Type, BusPath: sel.BusPath})
	} else {
		d, err = disk.ChooseDisk(devs, want)
	}

	if err != nil {
		return disk.BlockDevice{}, err
	}

	if _, err := disk.Plan(disk.SystemLayout, d.Size); err != nil {
		return disk.BlockDevice{}, fmt.Errorf("install disk %s: %w", d.Path, err)
	}

	return d, nil
}

// checkInstallable refuses, on a metal node that is not installed yet, a
// config whose install disk cannot take the system.
func (n *Node) checkInstallable(cfg *configs.Config) error {
	if !n.opts.Platform.IsMetal() || n.systemDisk() != "" {
		return nil
	}

	_, err := n.installTarget(cfg)

	return err
}

// installSystemDisk partitions and formats the install disk on the first
// boot with a config, then moves what the in-memory state dir holds (the
// node identity, the applied config) onto the new STATE.
func (n *Node) installSystemDisk(cfg *configs.Config) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		if n.systemDisk() != "" {
			return nil
		}

		// Disks behind drivers that probe asynchronously (AHCI, NVMe) may
		// show up after the first look: an installed disk found now is
		// mounted, never partitioned again.
		if err := n.mountState(ctx, io.Discard); err != nil {
			return err
		}

		if d := n.systemDisk(); d != "" {
			fmt.Fprintf(w, "[talos] found the %s partition on %s: already installed\n", disk.LabelState, d)
			return nil
		}

		target, err := n.installTarget(cfg)
		if err != nil {
			return err
		}

		fmt.Fprintf(w, "[talos] installing the system partitions on %s\n", target.Path)

		if _, err := disk.Install(target.Path, disk.SystemLayout, w); err != nil {
			return err
		}

		devs, err := disk.Scan(n.sysRoot)
		if err != nil {
			return err
		}

		st, ok := disk.FindPartition(devs, target.Name, disk.LabelState)
		if !ok {
			return fmt.Errorf("install to %s: the kernel shows no %s partition after the install", target.Path, disk.LabelState)
		}

		if err := n.moveStateTo(st, w); err != nil {
			return err
		}

		n.mu.Lock()
		n.sysDisk = target.Name
		n.mu.Unlock()

		return nil
	}
}

// moveStateTo mounts STATE on a staging directory, copies the in-memory
// state dir into it and moves the mount over the state dir.
func (n *Node) moveStateTo(st disk.BlockDevice, w io.Writer) error {
	staging := filepath.Join(filepath.Dir(n.state.Dir), ".state-install")

	if err := disk.Mount(st.Path, staging, stateMountFlags); err != nil {
		return err
	}

	if err := copyDir(staging, n.state.Dir); err != nil {
		disk.Unmount(staging) //nolint:errcheck // the copy error is the one to report

		return fmt.Errorf("copy the state to %s: %w", st.PartName, err)
	}

	if err := os.Chmod(staging, 0o700); err != nil {
		return fmt.Errorf("copy the state to %s: %w", st.PartName, err)
	}

	if err := os.MkdirAll(n.state.Dir, 0o700); err != nil {
		return err
	}

	if err := unix.Mount(staging, n.state.Dir, "", unix.MS_MOVE, ""); err != nil {
		disk.Unmount(staging) //nolint:errcheck // the move error is the one to report

		return fmt.Errorf("move %s to %s: %w", st.PartName, n.state.Dir, err)
	}

	n.mu.Lock()
	n.mounts = append(n.mounts, n.state.Dir)
	n.mu.Unlock()

	fmt.Fprintf(w, "[talos] mounted %s (%s) at %s\n", st.PartName, st.Path, n.state.Dir)

	return os.Remove(staging)
}

// mountEphemeral mounts EPHEMERAL of the system disk at /var.
func (n *Node) mountEphemeral(_ context.Context, w io.Writer) error {
	devs, err := disk.Scan(n.sysRoot)
	if err != nil {
		return err
	}

	eph, ok := disk.FindPartition(devs, n.systemDisk(), disk.LabelEphemeral)
	if !ok {
		return fmt.Errorf("the system disk %s has no %s partition", n.systemDisk(), disk.LabelEphemeral)
	}

	return n.mountVolume(eph, n.opts.Platform.EphemeralDir, ephemeralMountFlags, 0o755, w)
}

// unmountSystem unmounts the volumes, last mounted first. A volume that
// stays busy is reported and left: the caller syncs before the machine
// goes down, and the journal covers the rest.
func (n *Node) unmountSystem(_ context.Context, w io.Writer) error {
	n.mu.Lock()
	mounts := n.mounts
	n.mounts = nil
	n.mu.Unlock()

	for i := len(mounts) - 1; i >= 0; i-- {
		if err := disk.UnmountTree(mounts[i]); err != nil {
			fmt.Fprintf(w, "[talos] %v\n", err)
			continue
		}

		fmt.Fprintf(w, "[talos] unmounted %s\n", mounts[i])
	}

	return nil
}

// wipeVolume wipes a system label on metal: the volume is unmounted, then
// its signature is removed, so that the next boot formats it afresh.
// Before an install there is no partition: the in-memory dir is emptied.
func (n *Node) wipeVolume(label, dir string, w io.Writer) error {
	sysDisk := n.systemDisk()
	if sysDisk == "" {
		return Wipe(dir)
	}

	devs, err := disk.Scan(n.sysRoot)
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

	n.mu.Lock()
	kept := n.mounts[:0]
	for _, m := range n.mounts {
		if m != dir {
			kept = append(kept, m)
		}
	}
	n.mounts = kept
	n.mu.Unlock()

	if err := disk.WipeDevice(dev); err != nil {
		return err
	}

	fmt.Fprintf(w, "[talos] wiped %s (%s)\n", label, dev.Path)

	return nil
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
