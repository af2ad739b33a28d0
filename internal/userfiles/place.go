package userfiles

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// What a path holds, and the writes, all through os.Root handles on the
// allowed places.

// withPlace runs fn on the allowed directory of pl (made when mk).
func withPlace(r *os.Root, pl place, mk bool, fn func(*os.Root) error) error {
	dir, err := r.OpenRoot(pl.dir)
	if errors.Is(err, fs.ErrNotExist) && !mk {
		return fn(nil)
	}

	if err != nil {
		return err
	}
	defer dir.Close()

	return fn(dir)
}

func removeFile(dir *os.Root, name string) error {
	if dir == nil {
		return nil
	}

	if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	return syncDir(dir, path.Dir(name))
}

// replaceLink puts a symbolic link back where a file was written.
func replaceLink(dir *os.Root, name, target string) error {
	if dir == nil {
		return errors.New("its directory is gone")
	}

	var rnd [6]byte

	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".tmp-"+hex.EncodeToString(rnd[:]))

	if err := dir.Symlink(target, tmp); err != nil {
		return err
	}

	if err := dir.Rename(tmp, name); err != nil {
		return errors.Join(err, dir.Remove(tmp))
	}

	return syncDir(dir, path.Dir(name))
}

// removeEmptyDirs removes the directories made for a removed file,
// innermost first, as long as nothing else is in them.
func removeEmptyDirs(r *os.Root, dirs []string) {
	for _, d := range slices.Backward(dirs) {
		if err := r.Remove(strings.TrimPrefix(d, "/")); err != nil {
			return // not empty, or gone: so are those above it
		}
	}
}

// state is what a path holds on the node.
type state struct {
	kind   kind
	data   []byte
	mode   os.FileMode
	target string // a symlink's
	what   string // what other thing stands there
}

type kind int

const (
	absent kind = iota
	regular
	link
	other
)

func (s state) hash() string { return hashOf(s.kind, s.data, s.target) }

func hashOf(k kind, data []byte, target string) string {
	switch k {
	case regular:
		return "sha256:" + contentHash(data)
	case link:
		return "symlink:" + target
	case other:
		return "other"
	}

	return ""
}

// inspect reads what pl holds. A missing parent is an absent file.
func inspect(r *os.Root, pl place) (state, error) {
	var st state

	err := withPlace(r, pl, false, func(dir *os.Root) error {
		if dir == nil {
			return nil
		}

		fi, err := dir.Lstat(pl.name)

		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return nil
		case err != nil:
			return err
		case fi.Mode().IsRegular():
			data, err := dir.ReadFile(pl.name)
			if err != nil {
				return err
			}

			st = state{kind: regular, data: data, mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := dir.Readlink(pl.name)
			if err != nil {
				return err
			}

			st = state{kind: link, target: target}
		default:
			what := "a " + fi.Mode().Type().String()
			if fi.IsDir() {
				what = "a directory"
			}

			st = state{kind: other, what: what}
		}

		return nil
	})

	return st, err
}

// put replaces the file by renaming a fully written temporary file over
// it, so a crash leaves the old content or the new, never a mix. A
// symlink in the file's place is replaced, not followed.
func put(dir *os.Root, name string, data []byte, mode os.FileMode) error {
	var rnd [6]byte

	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".tmp-"+hex.EncodeToString(rnd[:]))

	fh, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}

	_, err = fh.Write(data)
	if err == nil {
		err = fh.Chmod(mode)
	}

	if err == nil {
		err = fh.Sync()
	}

	if err = errors.Join(err, fh.Close()); err != nil {
		return errors.Join(err, dir.Remove(tmp))
	}

	if err := dir.Rename(tmp, name); err != nil {
		return errors.Join(err, dir.Remove(tmp))
	}

	return syncDir(dir, path.Dir(name))
}

// modeBits is fileMode undone: a config's permission bits.
func modeBits(m os.FileMode) uint32 {
	b := uint32(m.Perm())

	for bit, flag := range map[uint32]os.FileMode{0o4000: os.ModeSetuid, 0o2000: os.ModeSetgid, 0o1000: os.ModeSticky} {
		if m&flag != 0 {
			b |= bit
		}
	}

	return b
}
