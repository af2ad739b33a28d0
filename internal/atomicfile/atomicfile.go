// Package atomicfile replaces files so that a reader, or the next boot
// after a crash or power loss, finds either the old content or the new,
// never a torn or empty file. The machine config, the node identity, keys
// and certificates, and the rendered Kubernetes files are all written
// through it.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Option changes how Write sets the new file up.
type Option func(*options)

type options struct {
	chown    bool
	uid, gid int
}

// WithOwner hands the new file to uid:gid before it takes the old one's
// place: a service that reads a 0400 file as its own user would get EACCES
// in the moment between a rename and a later chown.
func WithOwner(uid, gid int) Option {
	return func(o *options) { o.chown, o.uid, o.gid = true, uid, gid }
}

// TempPattern is how Write names its temporary files (a glob), so a boot
// can delete the ones an interrupted write left behind: they were never
// renamed, so they hold nothing that was ever in effect.
func TempPattern(name string) string { return "." + name + ".tmp-*" }

// Write replaces path with data and mode perm. The data goes to a
// temporary file in the same directory (a rename is atomic only within one
// filesystem), which is synced, then renamed over path; the directory is
// synced last so the rename itself survives a crash. On any error path is
// left as it was and the temporary file is removed.
func Write(path string, data []byte, perm fs.FileMode, opts ...Option) (err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}

	dir := filepath.Dir(path)

	tmp, err := os.CreateTemp(dir, TempPattern(filepath.Base(path)))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()

	steps := []struct {
		what string
		do   func() error
	}{
		// CreateTemp makes the file 0600; chmod explicitly so a wider perm
		// is honoured whatever the umask, and a narrower one never widened.
		{"set mode", func() error { return tmp.Chmod(perm) }},
		{"set owner", func() error {
			if !o.chown {
				return nil
			}

			return tmp.Chown(o.uid, o.gid)
		}},
		{"write", func() error { _, err := tmp.Write(data); return err }},
		{"sync", tmp.Sync},
		{"close", tmp.Close},
		{"rename", func() error { return os.Rename(tmp.Name(), path) }},
	}

	for _, s := range steps {
		if err = s.do(); err != nil {
			return fmt.Errorf("write %s: %s: %w", path, s.what, err)
		}
	}

	// The new content is in place; what is left is making the rename
	// durable. Failing that is reported, but the file must not be removed.
	if serr := syncDir(dir); serr != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, serr)
	}

	return nil
}

// syncDir fsyncs a directory. Some filesystems cannot (they answer EINVAL
// or ENOTSUP): they have no directory metadata to flush, so that is not a
// failure.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()

	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}

	return nil
}
