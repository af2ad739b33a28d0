// Package kmod loads machine.kernel.modules on metal, with their
// dependencies from modules.dep, the way modprobe would.
package kmod

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
)

// Options tune Load.
type Options struct {
	// ModulesDir holds modules.dep and the module files;
	// /lib/modules/$(uname -r) when empty.
	ModulesDir string
}

// DefaultModulesDir is the running kernel's modules directory.
func DefaultModulesDir() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}

	rel := unix.ByteSliceToString(u.Release[:])

	// Merged-/usr systems may ship only the /usr path.
	for _, base := range []string{"/lib/modules", "/usr/lib/modules"} {
		dir := filepath.Join(base, rel)
		if _, err := os.Stat(dir); err == nil {
			return dir, nil
		}
	}

	return filepath.Join("/lib/modules", rel), nil
}

// Load loads each module with its parameters, dependencies first.
// A module that is already loaded or built into the kernel counts as
// loaded; its parameters are then not applied, as with modprobe. Load
// keeps going after a failure and returns every failure joined.
func Load(modules []configs.KernelModule, opts Options) error {
	if len(modules) == 0 {
		return nil
	}

	dir := opts.ModulesDir
	if dir == "" {
		var err error
		if dir, err = DefaultModulesDir(); err != nil {
			return fmt.Errorf("load kernel modules: %w", err)
		}
	}

	return load(modules, dir, kernelLoader{})
}

// loader inserts one module file into the kernel. It returns an error
// matching unix.EEXIST when the module is loaded already.
type loader interface {
	load(path, params string) error
}

func load(modules []configs.KernelModule, dir string, l loader) error {
	var errs []error

	// Parameters are collected first so that a module pulled in as a
	// dependency of an earlier entry still gets the parameters its own
	// entry gives it: the kernel only takes them at load time.
	params := map[string]string{}

	var names []string

	for i, m := range modules {
		name := canonical(strings.TrimSpace(m.Name))
		if name == "" || strings.ContainsAny(name, "/ \t\n") {
			errs = append(errs, fmt.Errorf("machine.kernel.modules[%d]: invalid module name %q", i, m.Name))
			continue
		}

		p, err := formatParams(m.Parameters)
		if err != nil {
			errs = append(errs, fmt.Errorf("machine.kernel.modules[%d] (%s): %w", i, name, err))
			continue
		}

		if _, seen := params[name]; seen {
			params[name] = strings.TrimSpace(params[name] + " " + p)
			continue
		}

		params[name] = p
		names = append(names, name)
	}

	if len(names) == 0 {
		return errors.Join(errs...)
	}

	idx, err := loadIndex(dir)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("load kernel modules: %w", err))...)
	}

	// result remembers each path's outcome so that a dependency shared by
	// several modules is tried once and its failure reported for each.
	result := map[string]error{}

	for _, name := range names {
		if err := loadOne(idx, name, params, result, l); err != nil {
			errs = append(errs, err)
		}
	}

	return errors.Join(errs...)
}

func loadOne(idx *depIndex, name string, params map[string]string, result map[string]error, l loader) error {
	path, ok := idx.byName[name]
	if !ok {
		if idx.builtin[name] {
			return nil
		}

		return fmt.Errorf("load kernel module %s: not found in %s (and not built into the kernel)", name, filepath.Join(idx.dir, "modules.dep"))
	}

	order, err := idx.order(path)
	if err != nil {
		return fmt.Errorf("load kernel module %s: %w", name, err)
	}

	for _, p := range order {
		err, done := result[p]
		if !done {
			err = l.load(idx.abs(p), params[moduleName(p)])
			if errors.Is(err, unix.EEXIST) {
				err = nil
			}

			result[p] = err
		}

		if err == nil {
			continue
		}

		if p == path {
			return fmt.Errorf("load kernel module %s: %w", name, err)
		}

		return fmt.Errorf("load kernel module %s: dependency %s: %w", name, moduleName(p), err)
	}

	return nil
}

// formatParams is configs.ModuleParams: the rule config validation
// applies too, so a module the config accepts loads here.
func formatParams(params []string) (string, error) { return configs.ModuleParams(params) }
