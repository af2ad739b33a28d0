package talos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/storage"
	"github.com/talosbox/talosbox/internal/client"
)

// NewWipeCommand is `talosctl wipe`.
func NewWipeCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wipe",
		Short: "Wipe block device or volumes",
		Args:  cobra.NoArgs,
	}

	var (
		method                    string
		skipVolume, skipSecondary bool
		drop                      bool
	)

	methods := []string{storage.BlockDeviceWipeDescriptor_FAST.String(), storage.BlockDeviceWipeDescriptor_ZEROES.String()}

	disk := &cobra.Command{
		Use:   "disk <device names>...",
		Short: "Wipe a block device (disk or partition) which is not used as a volume",
		Long: `Wipe a block device (disk or partition) which is not used as a volume.

Use device names as arguments, for example: vda or sda5. The system disk, and
any device that is mounted or that another device is built on, is refused.`,
		Example: `  talosctl wipe disk vdb
  talosctl wipe disk vdb2 --drop-partition
  talosctl wipe disk sdc --method ZEROES`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, ok := storage.BlockDeviceWipeDescriptor_Method_value[method]
			if !ok {
				return fmt.Errorf("invalid wipe method %q (valid %s)", method, strings.Join(methods, ", "))
			}

			req := &storage.BlockDeviceWipeRequest{}

			for _, name := range args {
				name = strings.TrimPrefix(name, "/dev/")
				if slices.ContainsFunc(req.GetDevices(), func(d *storage.BlockDeviceWipeDescriptor) bool { return d.GetDevice() == name }) {
					return fmt.Errorf("device %s is named twice", name)
				}

				req.Devices = append(req.Devices, &storage.BlockDeviceWipeDescriptor{
					Device: name, Method: storage.BlockDeviceWipeDescriptor_Method(m),
					SkipVolumeCheck: skipVolume, SkipSecondaryCheck: skipSecondary, DropPartition: drop,
				})
			}

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*storage.BlockDeviceWipe, error) {
					resp, err := c.Storage.BlockDeviceWipe(ctx, req)
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				return global.ReportErrors(cmd, results)
			})
		},
	}

	fl := disk.Flags()
	fl.StringVar(&method, "method", methods[0], fmt.Sprintf("wipe method to use %v", methods))
	fl.BoolVar(&skipVolume, "skip-volume-check", false, "skip volume check")
	fl.BoolVar(&skipSecondary, "skip-secondary-check", false, "skip secondary disk check (e.g. underlying disk for RAID or LVM), use with caution")
	fl.BoolVar(&drop, "drop-partition", false, "drop partition after wipe (if applicable)")
	fl.MarkHidden("skip-volume-check")    //nolint:errcheck // the flag exists
	fl.MarkHidden("skip-secondary-check") //nolint:errcheck // the flag exists

	cmd.AddCommand(disk)

	return cmd
}

// NewDisksCommand is Talos's deprecated `talosctl disks`, which points to
// the resources that replaced it.
func NewDisksCommand(*global.Args) *cobra.Command {
	return &cobra.Command{
		Use:    "disks",
		Short:  "Get the list of disks from /sys/block on the machine",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("`talosctl disks` is deprecated, please use `talosctl get disks`, `talosctl get systemdisk`, `talosctl get discoveredvolumes` instead")
		},
	}
}
