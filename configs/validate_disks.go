package configs

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/talosbox/talosbox/internal/bootloader"
)

const mib = 1 << 20

// maxPartitionSize bounds a partition's size well below what rounding to a
// MiB or adding sizes up could overflow (8 EiB).
const maxPartitionSize = 1 << 62

// PartitionSize reads a machine.disks partition size ("100 GB", "4GiB",
// "1073741824") rounded up to a MiB, the unit partitions are laid out in;
// "" or "0" is 0: the rest of the disk. It is the rule for both validation
// and the boot that lays the disk out.
func PartitionSize(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}

	n, err := humanize.ParseBytes(s)
	if err != nil && strings.Contains(err.Error(), "too large") {
		return 0, fmt.Errorf("size %q is larger than any disk (%s)", s, humanize.IBytes(maxPartitionSize))
	}

	if err != nil {
		return 0, fmt.Errorf("invalid size %q: want a size such as \"10 GiB\", \"500MB\" or a number of bytes", s)
	}

	if n > maxPartitionSize {
		return 0, fmt.Errorf("size %q is larger than any disk (%s)", s, humanize.IBytes(maxPartitionSize))
	}

	return (n + mib - 1) / mib * mib, nil
}

// systemMountpoints are where a user disk must not be mounted: the node's
// own file systems, which a mount would hide.
var systemMountpoints = []string{"/", "/var", "/system", "/boot", "/etc", "/usr", "/bin", "/sbin", "/lib", "/proc", "/sys", "/dev", "/run", "/tmp"}

func (v *validator) disks(disks []MachineDisk, in *InstallConfig) {
	devices := map[string]int{}
	mounts := map[string]string{}

	for i, d := range disks {
		dp := indexPath("machine.disks", i)

		switch j, dup := devices[d.Device]; {
		case !strings.HasPrefix(d.Device, "/dev/"):
			v.errorf(dp+".device", "disk device %q must be a path under /dev/", d.Device)
		case path.Clean(d.Device) == "/dev":
			v.errorf(dp+".device", "disk device %q names no device: write the disk's path, such as /dev/sdb", d.Device)
		case dup:
			v.errorf(dp+".device", "disk %s is already configured by machine.disks[%d]: give each disk one entry with all its partitions", d.Device, j)
		case in != nil && in.Disk != "" && path.Clean(in.Disk) == path.Clean(d.Device):
			v.errorf(dp+".device", "%s is the install disk (machine.install.disk): the system partitions live there; a user disk must be another disk", d.Device)
		}

		devices[d.Device] = i

		if len(d.Partitions) == 0 {
			v.errorf(dp+".partitions", "at least one partition is required (mountpoint and size)")
		}

		var total uint64

		for j, part := range d.Partitions {
			pp := indexPath(dp+".partitions", j)

			v.userMount(pp+".mountpoint", part.MountPoint, mounts)

			size, err := PartitionSize(part.Size)

			switch {
			case err != nil:
				v.errorf(pp+".size", "%v", err)
			case size == 0 && j != len(d.Partitions)-1:
				v.errorf(pp+".size", "partition for disk %q is set to occupy the rest of the disk, but it is not the last partition in the list", d.Device)
			default:
				total += size
				if total > maxPartitionSize {
					v.errorf(pp+".size", "the partitions of %s add up to more than any disk holds", d.Device)
				}
			}
		}
	}
}

// userMount checks a user disk partition's mountpoint: an absolute, clean
// path, not a system one, and not another partition's.
func (v *validator) userMount(p, mnt string, mounts map[string]string) {
	switch {
	case mnt == "":
		v.errorf(p, "partition mountpoint is required")

		return
	case !strings.HasPrefix(mnt, "/"):
		v.errorf(p, "partition mountpoint %q must be an absolute path", mnt)

		return
	case path.Clean(mnt) != mnt:
		v.errorf(p, "partition mountpoint %q is not a clean path (did you mean %q?)", mnt, path.Clean(mnt))

		return
	case slices.Contains(systemMountpoints, mnt):
		v.errorf(p, "a user disk cannot be mounted at %s: it would hide the node's own file system (use a directory such as /var/mnt/data)", mnt)

		return
	}

	if other, dup := mounts[mnt]; dup {
		v.errorf(p, "%s is already the mountpoint of %s", mnt, other)
	}

	mounts[mnt] = p
}

var diskTypes = []string{"ssd", "hdd", "nvme", "sd"}

func (v *validator) install(in *InstallConfig) {
	const p = "machine.install"

	if in == nil {
		if v.mode.RequiresInstall() {
			v.errorf(p, "install instructions are required in %q mode", v.mode)
		}

		return
	}

	// An UnattendedInstallConfig chooses the disk by its expression (its
	// own check requires one), which the effective fields cannot hold.
	if in.Disk == "" && in.DiskSelector == nil && v.mode.RequiresInstall() && DocumentOf[*UnattendedInstallConfig](v.cfg) == nil {
		v.errorf(p, "either install disk or diskSelector should be defined")
	}

	switch {
	case in.Disk == "":
	case !strings.HasPrefix(in.Disk, "/dev/"):
		v.errorf(p+".disk", "install disk %q must be a path under /dev/", in.Disk)
	case path.Clean(in.Disk) == "/dev":
		v.errorf(p+".disk", "install disk %q names no device: write the disk's path, such as /dev/sda", in.Disk)
	}

	if sel := in.DiskSelector; sel != nil {
		if in.Disk != "" {
			v.warnf(p, "both disk and diskSelector are set; diskSelector wins")
		}

		if sel.Size != "" {
			v.check(p+".diskSelector.size", checkDiskSizeMatch(sel.Size))
		}

		if sel.Type != "" && !slices.Contains(diskTypes, sel.Type) {
			v.errorf(p+".diskSelector.type", "unsupported disk type %q (expected ssd, hdd, nvme or sd)", sel.Type)
		}
	}

	if in.Image != "" {
		v.check(p+".image", checkImage(in.Image))
	}

	for i, arg := range in.ExtraKernelArgs {
		ap := indexPath(p+".extraKernelArgs", i)

		if strings.TrimSpace(arg) == "" {
			v.errorf(ap, "kernel argument is empty")

			continue
		}

		if err := bootloader.CheckCmdline(arg); err != nil {
			v.errorf(ap, "%v", err)
		}
	}

	// Talos judges this only where the node installs (its stability
	// configs set both for container nodes).
	if len(in.ExtraKernelArgs) > 0 && in.GrubUseUKICmdline != nil && *in.GrubUseUKICmdline && v.mode.RequiresInstall() {
		v.errorf(p+".extraKernelArgs", "install.extraKernelArgs and install.grubUseUKICmdline can't be used together")
	}

	seen := map[string]int{}

	for i, ext := range in.Extensions {
		ep := indexPath(p+".extensions", i) + ".image"
		v.check(ep, checkImage(ext.Image))

		if j, dup := seen[ext.Image]; dup {
			v.errorf(ep, "duplicate system extension %q (also machine.install.extensions[%d])", ext.Image, j)
		}

		seen[ext.Image] = i
	}
}

// diskSizeOps are the comparisons of an install disk selector's size, as
// Talos's size matcher and the node's (internal/disk) read them: longest
// first, none meaning equal.
var diskSizeOps = []string{">=", "<=", "==", ">", "<"}

// checkDiskSizeMatch checks machine.install.diskSelector.size: an
// optional comparison, then a size ("<= 256GB", "1TB").
func checkDiskSizeMatch(s string) error {
	const want = `want a size with an optional comparison (>=, <=, ==, > or <), such as ">= 100GB"`

	rest := strings.TrimSpace(s)
	op := ""

	for _, o := range diskSizeOps {
		if strings.HasPrefix(rest, o) {
			op, rest = o, strings.TrimSpace(rest[len(o):])

			break
		}
	}

	if bad := len(rest) - len(strings.TrimLeft(rest, "<>=!~")); bad > 0 {
		return fmt.Errorf("invalid disk size %q: unknown comparison %q: %s", s, op+rest[:bad], want)
	}

	if _, err := humanize.ParseBytes(rest); err != nil {
		return fmt.Errorf("invalid disk size %q: %s", s, want)
	}

	return nil
}
