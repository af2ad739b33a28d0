package storage

// machine.disks: extra disks partitioned, formatted and mounted at boot,
// as Talos v0.9 does. A disk without partitions is laid out as the config
// says; one that has them is only mounted, so data survives reboots and
// config edits never repartition a disk.

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/disk"
)

const userMountFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME

// userLayout is the partition layout of one machine.disks entry: a GPT
// name derived from each mountpoint ("u-var-mnt-data"), sizes rounded up
// to a MiB, an empty size (only last) taking the rest, ext4 each.
func userLayout(d configs.MachineDisk) ([]disk.PartitionSpec, error) {
	if len(d.Partitions) == 0 {
		return nil, fmt.Errorf("machine.disks %s: no partitions", d.Device)
	}

	layout := make([]disk.PartitionSpec, len(d.Partitions))

	for i, p := range d.Partitions {
		size, err := configs.PartitionSize(p.Size)
		if err != nil {
			return nil, fmt.Errorf("machine.disks %s: partition %d: %w", d.Device, i+1, err)
		}

		label := "u-" + strings.ReplaceAll(strings.Trim(p.MountPoint, "/"), "/", "-")
		if len(label) > 36 {
			label = label[:36]
		}

		layout[i] = disk.PartitionSpec{Label: label, Type: disk.TypeLinuxData, Size: size, FS: disk.FSExt4}
	}

	return layout, nil
}

// MountUserDisks lays out (when blank) and mounts every machine.disks
// entry of cfg. A disk that cannot be used is reported and skipped: the
// node, its API and the other disks still come up.
func (v *Volumes) MountUserDisks(cfg *configs.Config) func(context.Context, io.Writer) error {
	return func(_ context.Context, w io.Writer) error {
		if cfg.Machine == nil {
			return nil
		}

		for _, d := range cfg.Machine.Disks {
			if err := v.mountUserDisk(d, w); err != nil {
				fmt.Fprintf(w, "[talos] %v: skipped\n", err)
			}
		}

		return nil
	}
}

func (v *Volumes) mountUserDisk(d configs.MachineDisk, w io.Writer) error {
	layout, err := userLayout(d)
	if err != nil {
		return err
	}

	devs, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		return err
	}

	i := slices.IndexFunc(devs, func(b disk.BlockDevice) bool { return b.Path == d.Device && !b.IsPartition() })
	if i < 0 {
		return fmt.Errorf("machine.disks: no disk %s here (disks: %s)", d.Device, disk.Describe(disk.Disks(devs)))
	}

	dev := devs[i]
	if dev.Name == v.SystemDisk() {
		return fmt.Errorf("machine.disks: %s is the system disk", d.Device)
	}

	parts := partitionsOf(devs, dev.Name)

	if len(parts) == 0 {
		fmt.Fprintf(w, "[talos] %s has no partitions: laying out %d as machine.disks says\n", d.Device, len(layout))

		if _, err := disk.Install(dev.Path, layout, w); err != nil {
			return fmt.Errorf("machine.disks: %w", err)
		}

		if devs, err = disk.Scan(v.opts.SysRoot); err != nil {
			return err
		}

		parts = partitionsOf(devs, dev.Name)
	}

	if len(parts) < len(d.Partitions) {
		return fmt.Errorf("machine.disks: %s has %d partition(s), the config names %d: repartitioning is never done; wipe the disk to lay it out again",
			d.Device, len(parts), len(d.Partitions))
	}

	for j, p := range d.Partitions {
		part := parts[j]

		if _, err := disk.EnsureFilesystem(part, disk.FSExt4); err != nil {
			return fmt.Errorf("machine.disks: %w", err)
		}

		if err := os.MkdirAll(p.MountPoint, 0o755); err != nil {
			return fmt.Errorf("machine.disks: %w", err)
		}

		if err := disk.Mount(part.Path, p.MountPoint, userMountFlags); err != nil {
			return fmt.Errorf("machine.disks: %w", err)
		}

		v.mu.Lock()
		v.mounts = append(v.mounts, p.MountPoint)
		v.mu.Unlock()

		fmt.Fprintf(w, "[talos] mounted %s (%s) at %s\n", part.Path, humanize.IBytes(uint64(part.Size)), p.MountPoint)
	}

	return nil
}

// partitionsOf lists a disk's partitions by index.
func partitionsOf(devs []disk.BlockDevice, diskName string) []disk.BlockDevice {
	var parts []disk.BlockDevice

	for _, b := range devs {
		if b.Disk == diskName {
			parts = append(parts, b)
		}
	}

	slices.SortFunc(parts, func(a, b disk.BlockDevice) int { return a.PartN - b.PartN })

	return parts
}
