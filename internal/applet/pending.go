package applet

import (
	"context"
	"fmt"

	"github.com/talosbox/talosbox/internal/version"
)

// Pending builds an applet that is planned but not built yet: it answers
// --help and --version and otherwise says plainly that it does nothing, so
// that no caller mistakes it for a working service.
func Pending(name, summary, help, issue string, aliases ...string) Applet {
	a := Applet{Name: name, Aliases: aliases, Summary: summary + " (not built yet)"}
	a.Main = func(_ context.Context, args []string, env Env) int {
		for _, arg := range args {
			switch arg {
			case "-h", "--help":
				fmt.Fprintf(env.Stdout, "Usage: %s [flags]\n\n%s\n\nStatus: not built yet in this talosbox (planned in %s).\n", name, help, issue)
				return 0
			case "--version":
				fmt.Fprintln(env.Stdout, version.Short(name))
				return 0
			}
		}

		fmt.Fprintf(env.Stderr, "%s: not built yet in this talosbox (planned in %s); see %s --help\n", name, issue, name)

		return 1
	}

	return a
}
