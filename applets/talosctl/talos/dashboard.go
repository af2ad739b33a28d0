package talos

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/dashboard"
)

// NewDashboardCommand is `talosctl dashboard`.
func NewDashboardCommand(g *global.Args) *cobra.Command {
	var interval time.Duration

	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Cluster dashboard with node overview, logs and real-time metrics",
		Long: `Provide a text-based UI to navigate node overview, logs and real-time metrics.

Keyboard shortcuts:

 - h, <Left> - switch one node to the left
 - l, <Right> - switch one node to the right
 - j, <Down> - scroll logs/process list down
 - k, <Up> - scroll logs/process list up
 - <C-d> - scroll logs/process list half page down
 - <C-u> - scroll logs/process list half page up
 - <C-f> - scroll logs/process list one page down
 - <C-b> - scroll logs/process list one page up
 - <F1>, <F2>, <F3> - summary, monitor, network screens
 - <C-z> - pause updates
 - q, <C-c> - quit
`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval <= 0 {
				return fmt.Errorf("--update-interval must be positive, got %s", interval)
			}

			// tcell draws on /dev/tty whatever stdout is; a dashboard
			// whose output is redirected would take the terminal anyway.
			if !isTerminal(cmd.OutOrStdout()) {
				return errors.New("dashboard: stdout is not a terminal")
			}

			return g.WithSession(false, func(s *global.Session) error {
				screen, err := tcell.NewScreen()
				if err != nil {
					return fmt.Errorf("dashboard: terminal: %w", err)
				}

				return dashboard.Run(cmd.Context(), screen, dashboard.Options{
					Sources:  dashboard.APISources(dashboard.SortNodes(s.Nodes), s.Reach),
					Interval: interval,
				})
			})
		},
	}

	cmd.Flags().DurationVarP(&interval, "update-interval", "d", dashboard.DefaultInterval, "interval between updates")

	return cmd
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}

	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)

	return err == nil
}
