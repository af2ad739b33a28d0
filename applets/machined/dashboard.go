package machined

import (
	"context"
	"io"
	"strings"

	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/dashboard"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// consoleDashboard is the dashboard service of a metal node booted with
// talos.dashboard.disabled=0: Talos's dashboard on a console terminal
// (talos.dashboard.tty, tty2 as Talos; talos.dashboard.term, linux). It is
// off unless asked for: under emulation its polling costs the guest
// CPU the boot needs.
func consoleDashboard(c platform.Cmdline) (supervisor.Service, bool) {
	if v, ok := c.Get("talos.dashboard.disabled"); !ok || v != "0" {
		return supervisor.Service{}, false
	}

	tty, _ := c.Get("talos.dashboard.tty")
	if tty == "" {
		tty = "tty2"
	}

	term, _ := c.Get("talos.dashboard.term")
	if term == "" {
		term = "linux"
	}

	opts := dashboard.ConsoleOptions{TTY: "/dev/" + strings.TrimPrefix(tty, "/dev/"), Term: term, Socket: constants.ApidLocalSocket}

	return supervisor.Service{
		ID: constants.DashboardServiceID,
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, _ io.Writer) error {
			return dashboard.RunConsole(ctx, opts)
		}),
	}, true
}

// withConsoleDashboard adds the console dashboard to a metal node's early
// services, when the kernel command line asks for it.
func withConsoleDashboard(early func(*machine.Node) []supervisor.Service) func(*machine.Node) []supervisor.Service {
	return func(n *machine.Node) []supervisor.Service {
		svcs := early(n)
		if !n.Platform().IsMetal() {
			return svcs
		}

		if c, err := platform.ReadCmdline(); err == nil {
			if svc, ok := consoleDashboard(c); ok {
				svcs = append(svcs, svc)
			}
		}

		return svcs
	}
}
