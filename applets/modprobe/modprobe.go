// Package modprobe is the modprobe applet: the program the kernel runs
// (/sbin/modprobe, kernel.modprobe's default) when something needs a
// module that is not loaded, such as the NFS client when a pod mounts an
// nfs volume. It loads the modules the image carries (internal/kmod)
// with their dependencies; a node has no other modprobe.
package modprobe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/kmod"
)

// Applet is modprobe's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "modprobe",
	Summary: "load a kernel module the image carries, by name or alias (what the kernel runs on demand)",
	Main:    Main,
}

const usage = `Usage: modprobe [-q] [-d DIR] [--] MODULE [PARAMETER=VALUE...]
       modprobe [-q] [-d DIR] -a MODULE...

Load MODULE, a module name or an alias the kernel asks for ("fs-nfs4"),
with its dependencies, from the modules the node's image carries
(/lib/modules/$(uname -r): modules.dep, modules.alias, modules.builtin).
A module that is loaded already, or built into the kernel, counts as
loaded. The kernel runs "modprobe -q -- NAME" itself when a mount, a
socket or a device needs a module that is not in it.

Flags:
`

// Main runs the applet with args (without the program name).
func Main(_ context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("modprobe", usage, env)

	quiet := fs.Bool("q", false, "say nothing when a module is not found")
	all := fs.Bool("a", false, "every argument is a module to load")
	dir := fs.String("d", "", "the modules directory (default /lib/modules/$(uname -r))")

	if code, done := fs.Parse(args); done {
		return code
	}

	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 1
	}

	if *dir == "" {
		var err error
		if *dir, err = kmod.DefaultModulesDir(); err != nil {
			fmt.Fprintf(env.Stderr, "modprobe: %v\n", err)
			return 1
		}
	}

	reqs := []configs.KernelModule{{Name: rest[0], Parameters: rest[1:]}}
	if *all {
		reqs = reqs[:0]
		for _, name := range rest {
			reqs = append(reqs, configs.KernelModule{Name: name})
		}
	}

	code := 0

	for _, r := range reqs {
		if err := Probe(*dir, r); err != nil {
			if !*quiet || !errors.Is(err, kmod.ErrNotFound) {
				fmt.Fprintf(env.Stderr, "modprobe: %v\n", err)
			}

			code = 1
		}
	}

	return code
}

// Probe loads the modules that answer to r.Name (kmod.Lookup), with r's
// parameters, from dir.
func Probe(dir string, r configs.KernelModule) error {
	names, err := kmod.Lookup(dir, r.Name)
	if err != nil {
		return err
	}

	mods := make([]configs.KernelModule, len(names))
	for i, n := range names {
		mods[i] = configs.KernelModule{Name: n, Parameters: r.Parameters}
	}

	if err := kmod.Load(mods, kmod.Options{ModulesDir: dir}); err != nil {
		return fmt.Errorf("%s (%s): %w", r.Name, strings.Join(names, " "), err)
	}

	return nil
}
