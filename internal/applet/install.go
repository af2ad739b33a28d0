package applet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

func (m *Multicall) runInstall(args []string, env Env) int {
	var (
		dir   string
		force bool
	)

	for _, arg := range args {
		switch {
		case arg == "--force" || arg == "-f":
			force = true
		case arg == "-h" || arg == "--help":
			fmt.Fprintf(env.Stdout, "Usage: %s --install DIR [--force]\n\nCreate a symlink named after each applet in DIR, pointing at this binary.\nAn existing symlink is replaced; any other file is refused unless --force.\n", m.Name)
			return 0
		case dir == "" && len(arg) > 0 && arg[0] != '-':
			dir = arg
		default:
			fmt.Fprintf(env.Stderr, "%s --install: unexpected argument %q\n", m.Name, arg)
			return 2
		}
	}

	if dir == "" {
		fmt.Fprintf(env.Stderr, "%s --install: missing DIR\n", m.Name)
		return 2
	}

	exe := m.Executable
	if exe == nil {
		exe = os.Executable
	}

	target, err := exe()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s --install: locate own binary: %v\n", m.Name, err)
		return 1
	}

	created, err := m.Install(dir, target, force)
	for _, p := range created {
		fmt.Fprintf(env.Stdout, "%s -> %s\n", p, target)
	}

	if err != nil {
		fmt.Fprintf(env.Stderr, "%s --install: %v\n", m.Name, err)
		return 1
	}

	return 0
}

// ErrNotSymlink is returned by Install when a regular file or directory is
// in the way and force was not given.
var ErrNotSymlink = errors.New("exists and is not a symlink (use --force to replace it)")

// Install creates DIR/NAME -> target for every applet name. Existing symlinks
// are replaced atomically; anything else is left alone unless force is set.
// It returns the links it made, even when it stops on an error.
func (m *Multicall) Install(dir, target string, force bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}

	abs, err := filepath.Abs(target)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", target, err)
	}

	var made []string

	for _, a := range m.Applets {
		for _, name := range a.Names() {
			link := filepath.Join(dir, name)
			if err := replaceLink(link, abs, force); err != nil {
				return made, fmt.Errorf("%s: %w", link, err)
			}

			made = append(made, link)
		}
	}

	return made, nil
}

func replaceLink(link, target string, force bool) error {
	fi, err := os.Lstat(link)

	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink == 0 && !force:
		return ErrNotSymlink
	case fi.IsDir():
		// Never rename over a directory, even with --force: that would
		// need a recursive delete of something we did not make.
		return fmt.Errorf("is a directory")
	}

	// Build the link beside its final name and rename it into place, so a
	// crash never leaves the name missing.
	tmp := link + ".talosbox-tmp"
	os.Remove(tmp) //nolint:errcheck // stale leftovers only

	if err := os.Symlink(target, tmp); err != nil {
		return err
	}

	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp) //nolint:errcheck
		return err
	}

	return nil
}
