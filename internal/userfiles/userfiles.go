// Package userfiles writes machine.files at boot, confined to the places
// a machine config may touch.
package userfiles

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// DefaultAllowed is where machine.files may write: configs.MachineFilePlaces,
// the rule validation applies too.
var DefaultAllowed = configs.MachineFilePlaces

// DefaultPermissions apply when a file gives none.
const DefaultPermissions configs.FileMode = 0o644

// Options tune Write.
type Options struct {
	// Root prefixes every path: "" is the real root, container mode and
	// tests give a directory.
	Root string
	// Allowed lists absolute prefixes (ending in "/") and single files a
	// path may name; empty means DefaultAllowed.
	Allowed []string
}

// Write applies the files in order: create and overwrite write the file
// (replacing it atomically when it exists, as after an earlier boot),
// append creates it when missing. Every
// file that can be written is; the errors of the others are returned
// together, each naming its file.
//
// Writes cannot leave the allowed place they name, even through symbolic
// links: each one happens through a handle on that place's directory
// (os.Root, which resolves every component with openat and refuses
// symlinks that lead out or are absolute).
func Write(files []configs.MachineFile, opts Options) error {
	if len(files) == 0 {
		return nil
	}

	root := opts.Root
	if root == "" {
		root = "/"
	}

	if !path.IsAbs(root) {
		return fmt.Errorf("write machine files: root %q is not an absolute path", root)
	}

	allowed := opts.Allowed
	if len(allowed) == 0 {
		allowed = DefaultAllowed
	}

	for _, a := range allowed {
		if !path.IsAbs(a) || a == "/" || path.Clean(a) != strings.TrimSuffix(a, "/") {
			return fmt.Errorf("write machine files: allowed entry %q must be a clean absolute path other than /", a)
		}
	}

	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("write machine files: %w", err)
	}
	defer r.Close()

	var errs []error

	for i, f := range files {
		if err := writeFile(r, f, allowed); err != nil {
			errs = append(errs, fmt.Errorf("machine.files[%d]: %w", i, err))
		}
	}

	return errors.Join(errs...)
}

// place is where one file goes: dir is the allowed directory it is
// confined to, relative to the root, and name its path inside dir.
type place struct {
	dir, name string
}

func locate(p string, allowed []string) (place, error) {
	dir, name, err := configs.MachineFilePlace(p, allowed)
	if err != nil {
		return place{}, err
	}

	return place{dir: strings.TrimPrefix(dir, "/"), name: name}, nil
}

// fileMode converts config permissions to an os.FileMode: Go keeps the
// setuid, setgid and sticky bits apart from the 0o777 ones.
func fileMode(m configs.FileMode) (os.FileMode, error) {
	if m == 0 {
		m = DefaultPermissions
	}

	if m > 0o7777 {
		return 0, fmt.Errorf("permissions 0o%o: only the bits 0o7777 may be set", uint32(m))
	}

	mode := os.FileMode(m & 0o777)

	for bit, flag := range map[configs.FileMode]os.FileMode{0o4000: os.ModeSetuid, 0o2000: os.ModeSetgid, 0o1000: os.ModeSticky} {
		if m&bit != 0 {
			mode |= flag
		}
	}

	return mode, nil
}

func writeFile(r *os.Root, f configs.MachineFile, allowed []string) error {
	pl, err := locate(f.Path, allowed)
	if err != nil {
		return err
	}

	mode, err := fileMode(f.Permissions)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}

	var write func(*os.Root, string, string, os.FileMode, bool) error

	switch f.Op {
	case "create":
		write = create
	case "append":
		write = appendTo
	case "overwrite":
		write = overwrite
	default:
		return fmt.Errorf("%s: unsupported op %q (expected create, append or overwrite)", f.Path, f.Op)
	}

	if err := mkdirs(r, "/", pl.dir); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}

	dir, err := r.OpenRoot(pl.dir)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	defer dir.Close()

	if err := mkdirs(dir, "/"+pl.dir, path.Dir(pl.name)); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}

	if err := write(dir, pl.name, f.Content, mode, f.Permissions != 0); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}

	return nil
}

// mkdirs is MkdirAll that makes new directories 0755 whatever the umask,
// since services other than root read what is written here. base is r's
// own path, for messages.
func mkdirs(r *os.Root, base, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}

	cur := ""

	for elem := range strings.SplitSeq(rel, "/") {
		cur = path.Join(cur, elem)

		err := r.Mkdir(cur, 0o755)

		switch {
		case err == nil:
			d, err := r.Open(cur)
			if err != nil {
				return err
			}

			err = errors.Join(d.Chmod(0o755), d.Close())
			if err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			fi, err := r.Stat(cur)
			if err != nil {
				return fmt.Errorf("parent %s: %w", path.Join(base, cur), err)
			}

			if !fi.IsDir() {
				return fmt.Errorf("parent %s exists and is not a directory", path.Join(base, cur))
			}
		default:
			return err
		}
	}

	return nil
}

// create writes the file. One that exists (the same file written by an
// earlier boot: /var persists) is replaced as overwrite replaces it, as
// Talos's create does; refusing it would fail every boot after the first.
func create(r *os.Root, name, content string, mode os.FileMode, explicit bool) error {
	fh, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return overwrite(r, name, content, mode, explicit)
	}

	if err != nil {
		return err
	}

	if err := fill(fh, content, mode); err != nil {
		return errors.Join(err, r.Remove(name))
	}

	return syncDir(r, path.Dir(name))
}

// appendTo adds content at the end, creating the file when missing. The
// permissions of an existing file change only when the config gives some.
func appendTo(r *os.Root, name, content string, mode os.FileMode, explicit bool) error {
	fh, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if err := fill(fh, content, mode); err != nil {
			return errors.Join(err, r.Remove(name))
		}

		return syncDir(r, path.Dir(name))
	}

	if !errors.Is(err, fs.ErrExist) {
		return err
	}

	fh, err = r.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}

	fi, err := fh.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}

	if err != nil {
		return errors.Join(err, fh.Close())
	}

	if !explicit {
		mode = 0
	}

	return fill(fh, content, mode)
}

// overwrite replaces the file by renaming a fully written temporary file
// over it, so a crash leaves the old content or the new, never a mix.
// A symlink in the file's place is replaced, not followed.
func overwrite(r *os.Root, name, content string, mode os.FileMode, _ bool) error {
	var rnd [6]byte

	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".tmp-"+hex.EncodeToString(rnd[:]))

	fh, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}

	if err := fill(fh, content, mode); err != nil {
		return errors.Join(err, r.Remove(tmp))
	}

	if err := r.Rename(tmp, name); err != nil {
		return errors.Join(err, r.Remove(tmp))
	}

	return syncDir(r, path.Dir(name))
}

// fill writes content, sets mode (unless 0) and syncs, then closes fh.
func fill(fh *os.File, content string, mode os.FileMode) error {
	_, err := fh.WriteString(content)
	if err == nil && mode != 0 {
		err = fh.Chmod(mode)
	}

	if err == nil {
		err = fh.Sync()
	}

	return errors.Join(err, fh.Close())
}

// syncDir makes a new directory entry durable.
func syncDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return err
	}

	return errors.Join(d.Sync(), d.Close())
}
