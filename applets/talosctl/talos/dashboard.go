package talos

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
)

// NewDashboardCommand is `talosctl dashboard`.
func NewDashboardCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:   "dashboard",
		Short: "Cluster dashboard with node overview, logs and real-time metrics",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_ = g

			return errors.New("dashboard: not yet")
		},
	}
}
