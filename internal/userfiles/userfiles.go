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

// DefaultAllowed is where Talos lets machine.files write: anywhere under
// /var (the EPHEMERAL partition), the containerd drop-ins and registry
// hosts files, and the CA bundle that the CA and proxy guides append to.
// An entry ending in "/" allows everything below it; any other entry
// allows that one file.
var DefaultAllowed = []string{
	"/var/",
	"/etc/cri/conf.d/hosts/",
	"/etc/cri/conf.d/20-customization.part",
	"/etc/ssl/certs/ca-certificates",
}

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

// Write applies the files in order: create fails when the file exists,
// append creates it when missing, overwrite replaces it atomically. Every
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
	if !strings.HasPrefix(p, "/") {
		return place{}, fmt.Errorf("path %q is not absolute", p)
	}

	if strings.HasSuffix(p, "/") {
		return place{}, fmt.Errorf("path %q names a directory, not a file", p)
	}

	// Checked on the raw path: path.Clean would quietly resolve
	// "/var/../etc/shadow" into something that looks legitimate.
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return place{}, fmt.Errorf("path %q must not contain \"..\"", p)
		}
	}

	clean := path.Clean(p)

	for _, a := range allowed {
		if dir, ok := strings.CutSuffix(a, "/"); ok {
			if name, ok := strings.CutPrefix(clean, a); ok {
				return place{dir: dir[1:], name: name}, nil
			}

			continue
		}

		if clean == a {
			return place{dir: path.Dir(a)[1:], name: path.Base(a)}, nil
		}
	}

	return place{}, fmt.Errorf("path %q is not writable: %s", p, describe(allowed))
}

func describe(allowed []string) string {
	var dirs, files []string

	for _, a := range allowed {
		if strings.HasSuffix(a, "/") {
			dirs = append(dirs, a)
		} else {
			files = append(files, a)
		}
	}

	var parts []string
	if len(dirs) > 0 {
		parts = append(parts, "under "+strings.Join(dirs, ", "))
	}

	if len(files) > 0 {
		parts = append(parts, "to "+strings.Join(files, ", "))
	}

	return "files may only be written " + strings.Join(parts, " or ")
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

// create writes a new file; an existing one, even a dangling symlink, is
// an error.
func create(r *os.Root, name, content string, mode os.FileMode, _ bool) error {
	fh, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return errors.New("already exists: op create never replaces a file (use overwrite or append)")
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
