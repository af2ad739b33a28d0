package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/storage"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// storageServer is StorageService: `talosctl wipe disk`.
type storageServer struct {
	storage.UnimplementedStorageServiceServer

	m *machineServer
}

// BlockDeviceWipe wipes each device, after checking all of them: one bad
// name or a device in use refuses the whole request, so nothing is
// wiped halfway through a list.
func (s *storageServer) BlockDeviceWipe(ctx context.Context, req *storage.BlockDeviceWipeRequest) (*storage.BlockDeviceWipeResponse, error) {
	if len(req.GetDevices()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no devices to wipe")
	}

	sysRoot := s.m.node.SysRoot()

	devs, err := disk.Scan(sysRoot)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}

	system := s.systemDisk(ctx)

	picked := make([]disk.BlockDevice, len(req.GetDevices()))

	for i, d := range req.GetDevices() {
		name := d.GetDevice()

		idx := -1
		for j := range devs {
			if devs[j].Name == name {
				idx = j
			}
		}

		if name == "" || strings.Contains(name, "/") || idx < 0 {
			return nil, status.Errorf(codes.NotFound, "wipe: no block device %q (give its name without /dev/, as `talosctl get blockdevices` lists it)", name)
		}

		dev := devs[idx]

		if system != "" && (dev.Name == system || dev.Disk == system) && !d.GetSkipVolumeCheck() {
			return nil, status.Errorf(codes.FailedPrecondition, "wipe: %s is the system disk (or on it): its volumes are in use; `talosctl reset` wipes them", name)
		}

		if d.GetDropPartition() && !dev.IsPartition() {
			return nil, status.Errorf(codes.InvalidArgument, "wipe: --drop-partition: %s is a disk, not a partition", name)
		}

		picked[i] = dev
	}

	for i, d := range req.GetDevices() {
		err := disk.WipeBlockDevice(picked[i], disk.WipeOptions{
			Zeroes:             d.GetMethod() == storage.BlockDeviceWipeDescriptor_ZEROES,
			DropPartition:      d.GetDropPartition(),
			SkipSecondaryCheck: d.GetSkipSecondaryCheck(),
			SysRoot:            sysRoot,
		})

		switch {
		case errors.Is(err, disk.ErrInUse):
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		case err != nil:
			return nil, status.Error(codes.Internal, err.Error())
		}

		fmt.Fprintf(s.m.log, "wiped block device %s (%s)\n", picked[i].Name, d.GetMethod())
	}

	return &storage.BlockDeviceWipeResponse{Messages: []*storage.BlockDeviceWipe{{}}}, nil
}

// systemDisk is the name of the disk holding STATE; empty on a node
// without one (a container).
func (s *storageServer) systemDisk(ctx context.Context) string {
	sd, err := bus.GetAs[*bus.Typed[block.SystemDiskSpec]](ctx, s.m.node.Store(), bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: block.SystemDiskType, ID: block.SystemDiskID})
	if err != nil {
		return ""
	}

	return strings.TrimPrefix(sd.TypedSpec().DevPath, "/dev/")
}
