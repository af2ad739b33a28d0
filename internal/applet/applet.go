// Package applet is the multicall machinery: a table of applets, dispatch on
// argv[0] or on `talosbox APPLET`, and `--install` of one symlink per applet.
// It does no work of its own so that every applet can be driven from a test
// without starting a process.
package applet

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/talosbox/talosbox/internal/version"
)

// ExitNotFound is the status for an unknown applet, as a shell uses 127 for
// an unknown command.
const ExitNotFound = 127

// Env is what an applet may touch of its process, passed in so tests can
// capture output and fake the environment.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// OSEnv is the Env of the running process.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// Applet is one personality of the binary.
type Applet struct {
	Name    string
	Aliases []string // extra names that dispatch here (machined answers to "init")
	Summary string   // one line for the applet list
	// Main runs the applet with the arguments that follow its name and
	// returns the process exit status.
	Main func(ctx context.Context, args []string, env Env) int
}

// Names is the applet's name followed by its aliases.
func (a Applet) Names() []string { return append([]string{a.Name}, a.Aliases...) }

// Multicall is the dispatcher for a set of applets under one binary name.
type Multicall struct {
	Name    string // the binary's own name, "talosbox"
	Applets []Applet
	// Executable returns the path symlinks point at; os.Executable by default.
	Executable func() (string, error)
}

// Lookup finds the applet answering to name.
func (m *Multicall) Lookup(name string) (Applet, bool) {
	for _, a := range m.Applets {
		if slices.Contains(a.Names(), name) {
			return a, true
		}
	}

	return Applet{}, false
}

// Run dispatches argv the way busybox does: argv[0]'s base name selects the
// applet; when it is the multicall name itself, argv[1] does.
func (m *Multicall) Run(ctx context.Context, argv []string, env Env) int {
	if len(argv) == 0 {
		m.usage(env.Stderr)
		return 2
	}

	// A program that re-executes itself through /proc/self/exe (the
	// containerd shim does, to daemonize) reaches the binary under the
	// file's own name ("talosbox", or "init" in an initramfs), with its
	// own flags and no applet name: it says which applet it is in the
	// environment its children inherit.
	if name := envOf(env, AppletEnv); name != "" && (len(argv) < 2 || strings.HasPrefix(argv[1], "-")) {
		if a, ok := m.Lookup(name); ok {
			return a.Main(ctx, argv[1:], env)
		}
	}

	base := filepath.Base(argv[0])
	if a, ok := m.Lookup(base); ok {
		return a.Main(ctx, argv[1:], env)
	}

	// A renamed copy ("talosbox-amd64", "talosbox.test") still behaves as
	// the multicall entry; any other unknown name is an unknown applet.
	if !strings.HasPrefix(base, m.Name) {
		return m.notFound(base, env)
	}

	return m.runSelf(ctx, argv[1:], env)
}

// AppletEnv names the applet a bare re-execution of the binary runs (see
// Run); an applet that re-executes itself sets it.
const AppletEnv = "TALOSBOX_APPLET"

func envOf(env Env, key string) string {
	if env.Getenv == nil {
		return ""
	}

	return env.Getenv(key)
}

func (m *Multicall) runSelf(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		m.usage(env.Stdout)
		return 0
	}

	switch args[0] {
	case "-h", "--help", "help":
		m.usage(env.Stdout)
		return 0
	case "--version", "version":
		fmt.Fprintln(env.Stdout, version.Short(m.Name))
		return 0
	case "--list":
		for _, a := range m.Applets {
			for _, n := range a.Names() {
				fmt.Fprintln(env.Stdout, n)
			}
		}

		return 0
	case "--install":
		return m.runInstall(args[1:], env)
	}

	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(env.Stderr, "%s: unknown flag %q\n\n", m.Name, args[0])
		m.usage(env.Stderr)

		return 2
	}

	a, ok := m.Lookup(args[0])
	if !ok {
		return m.notFound(args[0], env)
	}

	return a.Main(ctx, args[1:], env)
}

func (m *Multicall) notFound(name string, env Env) int {
	fmt.Fprintf(env.Stderr, "%s: applet not found: %s\n\n", m.Name, name)
	m.usage(env.Stderr)

	return ExitNotFound
}

func (m *Multicall) usage(w io.Writer) {
	fmt.Fprintf(w, "%s: one binary for an API-managed Kubernetes node.\n\n", m.Name)
	fmt.Fprintf(w, "Usage:\n  %s APPLET [ARGS...]   run an applet\n  APPLET [ARGS...]            run through a symlink named after the applet\n", m.Name)
	fmt.Fprintf(w, "  %s --install DIR [--force]   create one symlink per applet in DIR\n", m.Name)
	fmt.Fprintf(w, "  %s --list | --version | --help\n\nApplets:\n", m.Name)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, a := range m.Applets {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.Join(a.Names(), ", "), a.Summary)
	}

	tw.Flush() //nolint:errcheck // best effort on a terminal
}
