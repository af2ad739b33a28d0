package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/cgroups"
	"github.com/talosbox/talosbox/internal/client"
)

// NewCgroupsCommand is `talosctl cgroups`: the node's cgroup v2 tree
// with one of Talos's presets.
func NewCgroupsCommand(g *global.Args) *cobra.Command {
	var preset string

	cmd := &cobra.Command{
		Use:     "cgroups",
		Aliases: []string{"cg"},
		Short:   "Retrieve cgroups usage information",
		Long: `The cgroups command fetches control group v2 (cgroupv2) usage details from the machine.
Several presets are available to focus on specific cgroup subsystems:

* ` + strings.Join(cgroups.PresetNames(), "\n* ") + `

You can specify the preset using the --preset flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cols, ok := cgroups.Presets[preset]
			if !ok {
				return fmt.Errorf("invalid preset name: %q (valid %v)", preset, cgroups.PresetNames())
			}

			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
					root, procs, err := readCgroups(ctx, c)
					if err != nil {
						return struct{}{}, err
					}

					w := global.NewTable(cmd.OutOrStdout())
					cgroups.Print(w, root, cols, procs)

					return struct{}{}, w.Flush()
				})

				return global.ReportErrors(cmd, results)
			})
		},
	}

	cmd.Flags().StringVar(&preset, "preset", "", fmt.Sprintf("preset name (one of: %v)", cgroups.PresetNames()))
	cmd.MarkFlagRequired("preset") //nolint:errcheck // the flag exists

	return cmd
}

// readCgroups copies the node's /sys/fs/cgroup and its process names.
func readCgroups(ctx context.Context, c *client.Client) (*cgroups.Node, map[string]string, error) {
	stream, err := c.Machine.Copy(ctx, &machine.CopyRequest{RootPath: "/sys/fs/cgroup"})
	if err != nil {
		return nil, nil, err
	}

	r, w := io.Pipe()

	go func() { w.CloseWithError(client.CopyStream(stream, w)) }()

	root, err := cgroups.FromTar(r, "cgroup")
	r.Close() //nolint:errcheck

	if errors.Is(err, cgroups.ErrNotV2) {
		return nil, nil, errors.New("the node's /sys/fs/cgroup is not cgroup v2 (a container on a host with cgroup v1 hierarchies): talosctl cgroups reads cgroup v2 only, as Talos's does")
	}

	if err != nil {
		return nil, nil, err
	}

	procs := map[string]string{}

	if resp, err := c.Machine.Processes(ctx, &emptypb.Empty{}); err == nil {
		for _, m := range resp.GetMessages() {
			for _, p := range m.GetProcesses() {
				procs[strconv.Itoa(int(p.GetPid()))] = p.GetCommand()
			}
		}
	}

	return root, procs, nil
}
