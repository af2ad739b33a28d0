// Package userfiles writes machine.files at boot, confined to the places
// a machine config may touch.
package userfiles

import (
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

// Options tune Sync.
type Options struct {
	// Root prefixes every path: "" is the real root, container mode and
	// tests give a directory.
	Root string
	// Allowed lists absolute prefixes (ending in "/") and single files a
	// path may name; empty means DefaultAllowed.
	Allowed []string
	// StateDir keeps the manifest of what configs wrote (ManifestFile) and
	// the originals they replaced, so that a config that drops a file
	// removes it or puts the original back. "" keeps none: nothing is
	// removed or restored, and an append adds to whatever the file holds.
	StateDir string
	// Config names the config that writes (its sha256), recorded with
	// each file.
	Config string
}

// Write is Sync without its report.
func Write(files []configs.MachineFile, opts Options) error {
	_, err := Sync(files, opts)

	return err
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

// mkdirs is MkdirAll that makes new directories 0755 whatever the umask,
// since services other than root read what is written here. base is r's
// own path, for messages and for made: the directories it created, as
// node paths, outermost first.
func mkdirs(r *os.Root, base, rel string) (made []string, err error) {
	if rel == "." || rel == "" {
		return nil, nil
	}

	cur := ""

	for elem := range strings.SplitSeq(rel, "/") {
		cur = path.Join(cur, elem)

		err := r.Mkdir(cur, 0o755)

		switch {
		case err == nil:
			made = append(made, path.Join(base, cur))

			d, err := r.Open(cur)
			if err != nil {
				return made, err
			}

			err = errors.Join(d.Chmod(0o755), d.Close())
			if err != nil {
				return made, err
			}
		case errors.Is(err, fs.ErrExist):
			fi, err := r.Stat(cur)
			if err != nil {
				return made, fmt.Errorf("parent %s: %w", path.Join(base, cur), err)
			}

			if !fi.IsDir() {
				return made, fmt.Errorf("parent %s exists and is not a directory", path.Join(base, cur))
			}
		default:
			return made, err
		}
	}

	return made, nil
}

// syncDir makes a new directory entry durable.
func syncDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return err
	}

	return errors.Join(d.Sync(), d.Close())
}
