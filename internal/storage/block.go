package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// BlockController mirrors the machine's block devices into Disks,
// BlockDevices and the SystemDisk. It rescans on the kernel's block
// uevents and, where those do not reach it (a container), every Interval.
type BlockController struct {
	// SysRoot is where sysfs is (/sys).
	SysRoot string
	// DevRoot prefixes the device paths probed (tests; default none).
	DevRoot string
	// Interval is the fallback rescan period (30 s).
	Interval time.Duration
	// Rescan, when set, asks for a scan (tests).
	Rescan <-chan struct{}
}

// Name implements bus.Controller.
func (*BlockController) Name() string { return "block.BlockController" }

// Inputs implements bus.Controller.
func (*BlockController) Inputs() []bus.Input { return nil }

// Outputs implements bus.Controller.
func (*BlockController) Outputs() []bus.Output {
	return []bus.Output{{Type: block.DiskType}, {Type: block.BlockDeviceType}, {Type: block.DiscoveredVolumeType}, {Type: block.SystemDiskType}}
}

// Run implements bus.Controller.
func (c *BlockController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	every := c.Interval
	if every == 0 {
		every = 30 * time.Second
	}

	tick := time.NewTicker(every)
	defer tick.Stop()

	uevents := make(chan struct{}, 1)

	// The reader owns the socket and closes it when the run ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if fd, err := openUevents(); err == nil {
		go readUevents(ctx, fd, uevents)
	} else {
		r.Logger().Debug("no block uevents, rescanning on a timer", "error", err)
	}

	for {
		if err := c.reconcile(ctx, r); err != nil {
			return err
		}

		r.ResetRestartBackoff()

		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-tick.C:
		case <-uevents:
		case <-c.Rescan:
		}
	}
}

func (c *BlockController) reconcile(ctx context.Context, r bus.ControllerRuntime) error {
	devs, err := disk.Scan(c.SysRoot)
	if err != nil {
		return err
	}

	disks := map[string]block.DiskSpec{}
	blocks := map[string]block.BlockDeviceSpec{}
	volumes := map[string]block.DiscoveredVolumeSpec{}
	system := map[string]block.SystemDiskSpec{}

	for _, d := range devs {
		b := block.BlockDeviceSpec{Type: "disk", Major: d.Major, Minor: d.Minor, DevicePath: d.Path}

		if d.IsPartition() {
			b.Type, b.PartitionName, b.PartitionNumber, b.Parent = "partition", d.PartName, d.PartN, d.Disk
		} else {
			disks[d.Name] = block.DiskSpec{
				DevPath: d.Path, Size: d.Size, PrettySize: humanize.Bytes(uint64(d.Size)), IOSize: d.IOSize, SectorSize: d.SectorSize,
				Readonly: d.ReadOnly, CDROM: strings.HasPrefix(d.Name, "sr"), Model: d.Model, Serial: d.Serial, Modalias: d.Modalias,
				WWID: d.WWID, UUID: d.UUID, BusPath: d.BusPath, Transport: d.Transport, Rotational: d.Rotational,
			}
		}

		blocks[d.Name] = b

		if v, ok := c.discover(d); ok {
			volumes[d.Name] = v
		}
	}

	if st, ok := disk.FindPartition(devs, "", disk.LabelState); ok {
		system[block.SystemDiskID] = block.SystemDiskSpec{DiskID: st.Disk, DevPath: "/dev/" + st.Disk}
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, block.DiskType, disks); err != nil {
		return fmt.Errorf("disks: %w", err)
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, block.BlockDeviceType, blocks); err != nil {
		return fmt.Errorf("block devices: %w", err)
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, block.DiscoveredVolumeType, volumes); err != nil {
		return fmt.Errorf("discovered volumes: %w", err)
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, block.SystemDiskType, system); err != nil {
		return fmt.Errorf("system disk: %w", err)
	}

	return nil
}

// discover probes a device's first blocks. Devices that cannot be opened
// (a container sees the host's sysfs but not its /dev), removable and
// empty ones are left out.
func (c *BlockController) discover(d disk.BlockDevice) (block.DiscoveredVolumeSpec, bool) {
	if d.Removable || d.Size == 0 || strings.HasPrefix(d.Name, "sr") {
		return block.DiscoveredVolumeSpec{}, false
	}

	f, err := os.Open(filepath.Join(c.DevRoot, d.Path))
	if err != nil {
		return block.DiscoveredVolumeSpec{}, false
	}
	defer f.Close()

	found, err := disk.ProbeVolume(disk.Region{File: f, Size: d.Size})
	if err != nil {
		return block.DiscoveredVolumeSpec{}, false
	}

	v := block.DiscoveredVolumeSpec{DevPath: d.Path, Type: "disk", Size: d.Size, PrettySize: humanize.Bytes(uint64(d.Size)), SectorSize: d.SectorSize,
		Name: found.Name, UUID: found.UUID, Label: found.Label}

	if d.IsPartition() {
		v.Type, v.Parent, v.PartitionLabel, v.PartitionIndex = "partition", d.Disk, d.PartName, d.PartN
	}

	return v, true
}

// openUevents subscribes to the kernel's uevents (the group udev reads).
func openUevents() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		return -1, err
	}

	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		unix.Close(fd) //nolint:errcheck

		return -1, err
	}

	// Wake the blocked read when the controller stops.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd) //nolint:errcheck

		return -1, err
	}

	return fd, nil
}

// readUevents signals on every block device event until ctx ends, then
// closes fd.
func readUevents(ctx context.Context, fd int, out chan<- struct{}) {
	defer unix.Close(fd) //nolint:errcheck

	buf := make([]byte, 16<<10)

	for ctx.Err() == nil {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}

			return
		}

		if bytes.Contains(buf[:n], []byte("\x00SUBSYSTEM=block\x00")) {
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}
}
