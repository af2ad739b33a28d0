package storage

// UserVolumeConfig: the user's volumes, mounted at /var/mnt/<name>, made at
// boot as Talos makes them. A partition volume is found by its GPT label
// (u-<name>) on any disk; missing, it is added in the largest free run of
// the first disk its selector matches that has room for it, and
// formatted. A disk volume is the first matching disk that is blank or
// already holds its filesystem. A directory volume is a directory on
// EPHEMERAL. Nothing found is ever made again, so data survives reboots
// and config edits.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/diskexpr"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/resources/block"
)

// MountUserVolumes makes (when missing) and mounts every UserVolumeConfig
// of cfg. A volume that cannot be made or mounted is reported, with its
// VolumeStatus failed, and skipped: the node and the other volumes still
// come up.
func (v *Volumes) MountUserVolumes(cfg *configs.Config) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		for _, u := range configs.DocumentsOf[*configs.UserVolumeConfig](cfg) {
			if err := v.mountUserVolume(ctx, u, configs.UserVolumeMountRoot, disk.Disks, w); err != nil {
				fmt.Fprintf(w, "[talos] user volume %s: %v: skipped\n", u.Name, err)
			}
		}

		return nil
	}
}

// mountUserVolume makes and mounts u under root; candidates are the disks
// a volume may be made on (disk.Disks).
func (v *Volumes) mountUserVolume(ctx context.Context, u *configs.UserVolumeConfig, root string, candidates func([]disk.BlockDevice) []disk.BlockDevice, w io.Writer) error {
	id := configs.UserVolumePrefix + u.Name
	target := filepath.Join(root, u.Name)
	st := block.VolumeStatusSpec{Type: u.Type(), MountPath: target}

	err := v.mountUserVolumeAs(u, target, candidates, &st, w)

	st.Phase = block.PhaseReady
	if err != nil {
		st.Phase, st.ErrorMessage = block.PhaseFailed, err.Error()
	}

	v.publishVolumeStatus(ctx, id, st)

	return err
}

func (v *Volumes) mountUserVolumeAs(u *configs.UserVolumeConfig, target string, candidates func([]disk.BlockDevice) []disk.BlockDevice, st *block.VolumeStatusSpec, w io.Writer) error {
	if u.Type() == configs.UserVolumeDirectory {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}

		st.Location = target
		fmt.Fprintf(w, "[talos] user volume %s: directory %s\n", u.Name, target)

		return nil
	}

	sel, err := u.Selector()
	if err != nil || sel == nil {
		return fmt.Errorf("disk selector: %w", cmp.Or(err, errors.New("none is set")))
	}

	devs, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		return err
	}

	var dev disk.BlockDevice

	if u.Type() == configs.UserVolumeDisk {
		dev, err = v.userVolumeDisk(u, sel, candidates(devs))
	} else {
		dev, err = v.userVolumePartition(u, sel, devs, candidates(devs), w)
	}

	if err != nil {
		return err
	}

	st.Location, st.Size, st.PrettySize, st.Filesystem, st.MountLocation = dev.Path, dev.Size, humanize.Bytes(uint64(dev.Size)), disk.FSExt4, dev.Path
	if dev.IsPartition() {
		st.ParentLocation, st.PartitionIndex = "/dev/"+dev.Disk, dev.PartN
	}

	formatted, err := disk.EnsureFilesystem(dev, disk.FSExt4)
	if err != nil {
		return err
	}

	if formatted {
		fmt.Fprintf(w, "[talos] user volume %s (%s) was empty: formatted it %s\n", u.Name, dev.Path, disk.FSExt4)
	}

	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}

	var flags uintptr
	if u.Secure() {
		flags |= unix.MS_NOSUID | unix.MS_NODEV
	}

	if u.NoAccessTime() {
		flags |= unix.MS_NOATIME
	}

	if err := disk.Mount(dev.Path, target, flags); err != nil {
		return err
	}

	v.mu.Lock()
	v.mounts = append(v.mounts, target)
	v.mu.Unlock()

	fmt.Fprintf(w, "[talos] mounted user volume %s (%s, %s) at %s\n", u.Name, dev.Path, humanize.IBytes(uint64(dev.Size)), target)

	return nil
}

// userVolumePartition finds u's partition by its label, or adds it to the
// first disk among candidates that sel matches and has room for it.
func (v *Volumes) userVolumePartition(u *configs.UserVolumeConfig, sel *diskexpr.Expr, devs, candidates []disk.BlockDevice, w io.Writer) (disk.BlockDevice, error) {
	label := configs.UserVolumePrefix + u.Name

	if p, ok := findLabelled(devs, label); ok {
		return p, nil
	}

	var passed []string

	for _, d := range candidates {
		ok, err := sel.Match(v.diskEnv(d))
		if err != nil {
			return disk.BlockDevice{}, err
		}

		if !ok {
			continue
		}

		room, err := disk.FreeSpace(d.Path)
		if err != nil {
			passed = append(passed, err.Error()) // it names the disk

			continue
		}

		size, err := u.PartitionSize(room.Bytes())
		if err != nil {
			passed = append(passed, fmt.Sprintf("%s: %v", d.Path, err))

			continue
		}

		e, err := disk.AddPartition(d.Path, label, disk.TypeLinuxData, size)
		if err != nil {
			return disk.BlockDevice{}, err
		}

		fmt.Fprintf(w, "[talos] user volume %s: added partition %d %s (%s) to %s\n", u.Name, e.Index, label, humanize.IBytes(uint64(e.Bytes())), d.Path)

		return v.waitPartition(d.Name, e.Index, label)
	}

	return disk.BlockDevice{}, noDisk(sel, candidates, passed)
}

// userVolumeDisk is the first disk among candidates sel matches that is
// blank or holds ext4 (the volume, made before).
func (v *Volumes) userVolumeDisk(u *configs.UserVolumeConfig, sel *diskexpr.Expr, candidates []disk.BlockDevice) (disk.BlockDevice, error) {
	var passed []string

	for _, d := range candidates {
		ok, err := sel.Match(v.diskEnv(d))
		if err != nil {
			return disk.BlockDevice{}, err
		}

		if !ok {
			continue
		}

		found, err := probePath(d)
		if err != nil {
			return disk.BlockDevice{}, err
		}

		if found != "" && found != disk.ProbeExt4 {
			passed = append(passed, fmt.Sprintf("%s: holds %s", d.Path, found))

			continue
		}

		d.PartName = configs.UserVolumePrefix + u.Name // the filesystem's label

		return d, nil
	}

	return disk.BlockDevice{}, noDisk(sel, candidates, passed)
}

func noDisk(sel *diskexpr.Expr, candidates []disk.BlockDevice, passed []string) error {
	if len(passed) > 0 {
		return fmt.Errorf("no disk that %s matches has room: %s", sel, strings.Join(passed, "; "))
	}

	described := make([]string, len(candidates))
	for i, d := range candidates {
		described[i] = d.Path + " (" + describeDisk(d) + ")"
	}

	if len(described) == 0 {
		described = []string{"none"}
	}

	return fmt.Errorf("%s matches no disk here (disks: %s)", sel, strings.Join(described, ", "))
}

// describeDisk says what a selector sees of d: its size, and the fields
// selectors test most, when the kernel tells them.
func describeDisk(d disk.BlockDevice) string {
	parts := []string{fmt.Sprintf("%.1f GiB", float64(d.Size)/(1<<30))}

	for _, f := range []struct{ name, value string }{{"transport", d.Transport}, {"model", d.Model}, {"serial", d.Serial}} {
		if f.value != "" {
			parts = append(parts, fmt.Sprintf("%s %q", f.name, f.value))
		}
	}

	return strings.Join(parts, ", ")
}

func probePath(d disk.BlockDevice) (string, error) {
	f, err := os.Open(d.Path)
	if err != nil {
		return "", err
	}
	defer f.Close()

	return disk.Probe(disk.Region{File: f, Size: d.Size})
}

// findLabelled finds the partition labelled label on any disk, reading
// each GPT itself: a partition added since boot has no PARTNAME in sysfs.
func findLabelled(devs []disk.BlockDevice, label string) (disk.BlockDevice, bool) {
	for _, d := range devs {
		if d.IsPartition() {
			continue
		}

		f, err := os.Open(d.Path)
		if err != nil {
			continue
		}

		parts, err := disk.ReadTable(f)
		f.Close()

		if err != nil {
			continue
		}

		for _, p := range parts {
			if p.Label != label {
				continue
			}

			for _, b := range devs {
				if b.Disk == d.Name && b.PartN == p.Index {
					b.PartName = label

					return b, true
				}
			}
		}
	}

	return disk.BlockDevice{}, false
}

// waitPartition waits for the kernel to show the partition just added
// (its device node comes from devtmpfs, a moment later).
func (v *Volumes) waitPartition(diskName string, index int, label string) (disk.BlockDevice, error) {
	deadline := time.Now().Add(10 * time.Second)

	for {
		devs, err := disk.Scan(v.opts.SysRoot)
		if err != nil {
			return disk.BlockDevice{}, err
		}

		for _, b := range devs {
			if b.Disk == diskName && b.PartN == index {
				if fi, err := os.Stat(b.Path); err == nil && fi.Mode()&os.ModeDevice != 0 {
					b.PartName = label

					return b, nil
				}
			}
		}

		if time.Now().After(deadline) {
			return disk.BlockDevice{}, fmt.Errorf("partition %d of %s did not appear", index, diskName)
		}

		time.Sleep(50 * time.Millisecond)
	}
}

// diskEnv is what a disk selector sees of d.
func (v *Volumes) diskEnv(d disk.BlockDevice) diskexpr.Env {
	return diskexpr.Env{
		Disk: diskexpr.Disk{
			DevPath: d.Path, Model: d.Model, Serial: d.Serial, Modalias: d.Modalias, WWID: d.WWID, UUID: d.UUID,
			BusPath: d.BusPath, Transport: d.Transport, PrettySize: humanize.Bytes(uint64(d.Size)),
			Size: uint64(d.Size), IOSize: uint64(d.IOSize), SectorSize: uint64(d.SectorSize),
			Readonly: d.ReadOnly, Rotational: d.Rotational, CDROM: strings.HasPrefix(d.Name, "sr"),
		},
		SystemDisk: d.Name != "" && d.Name == v.SystemDisk(),
	}
}
