package meta

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Locking follows Talos: a shared flock(2) on the partition while it is
// read, an exclusive one while it is written, so that two writers (machined
// and an installer, say) never interleave their copies.

// Open reads the META partition (or image file) at path under a shared
// lock. Flush writes it back to the same path.
func Open(path string) (*Meta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open META: %w", err)
	}
	defer f.Close()

	m, err := readShared(f)
	if err != nil {
		return nil, fmt.Errorf("META on %s: %w", path, err)
	}

	m.path = path

	return m, nil
}

// OpenFile reads META from f, which the caller keeps open (read-write if
// it is to be flushed) and closes.
func OpenFile(f *os.File) (*Meta, error) {
	m, err := readShared(f)
	if err != nil {
		return nil, fmt.Errorf("META on %s: %w", f.Name(), err)
	}

	m.file = f

	return m, nil
}

// readShared reads f under a shared lock, released on return (closing f
// would release it too, but OpenFile's f stays open).
func readShared(f *os.File) (*Meta, error) {
	if err := flock(f, unix.LOCK_SH); err != nil {
		return nil, err
	}
	defer flock(f, unix.LOCK_UN) //nolint:errcheck // released on close anyway

	return read(f)
}

// read reads f, which the caller has locked.
func read(f *os.File) (*Meta, error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("size: %w", err)
	}

	return decode(f, size)
}

// Flush writes both copies of the Talos ADV and the syslinux area, under
// an exclusive lock, and syncs. It repairs every damaged copy.
func (m *Meta) Flush() error {
	f := m.file
	if f == nil {
		if m.path == "" {
			return errors.New("flush META: no partition to write to (made by New or Decode: use Encode)")
		}

		var err error
		if f, err = os.OpenFile(m.path, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("flush META: %w", err)
		}
		defer f.Close()
	}

	if err := flock(f, unix.LOCK_EX); err != nil {
		return fmt.Errorf("flush META to %s: %w", f.Name(), err)
	}
	defer flock(f, unix.LOCK_UN) //nolint:errcheck // released on close anyway

	if err := m.write(f); err != nil {
		return fmt.Errorf("flush META to %s: %w", f.Name(), err)
	}

	return nil
}

// write puts the META on f (already locked) and syncs it.
func (m *Meta) write(f *os.File) error {
	adv, err := m.encodeADV()
	if err != nil {
		return err
	}

	if _, err := f.WriteAt(adv, 0); err != nil {
		return err
	}

	if _, err := f.WriteAt(m.legacy.bytes(), m.size-LegacySize); err != nil {
		return err
	}

	if err := f.Sync(); err != nil {
		return err
	}

	m.damaged, m.blank, m.dirty = nil, false, false

	return nil
}

// Edit is a read-modify-write of the META at path under one exclusive
// lock, so that no other writer's change is lost in between. fn changes m;
// the partition is written when fn changed something or a copy needed
// repair (a blank partition stays blank until a tag is set). It returns
// the META as it now is and the copies it repaired. When fn fails nothing
// is written.
func Edit(path string, fn func(m *Meta) error) (*Meta, []Damage, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open META: %w", err)
	}
	defer f.Close()

	// flock(2) locks belong to the open file: the write below must go
	// through f, never through Flush's own open, or it would wait on this
	// very lock.
	if err := flock(f, unix.LOCK_EX); err != nil {
		return nil, nil, fmt.Errorf("META on %s: %w", path, err)
	}
	defer flock(f, unix.LOCK_UN) //nolint:errcheck // released on close anyway

	m, err := read(f)
	if err != nil {
		return nil, nil, fmt.Errorf("META on %s: %w", path, err)
	}

	m.path = path

	if fn != nil {
		if err := fn(m); err != nil {
			return nil, nil, err
		}
	}

	repaired := m.Damaged()
	if !m.dirty && len(repaired) == 0 {
		return m, nil, nil
	}

	if err := m.write(f); err != nil {
		return nil, nil, fmt.Errorf("write META to %s: %w", path, err)
	}

	return m, repaired, nil
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		runtime.KeepAlive(f)

		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return fmt.Errorf("flock: %w", err)
			}

			return nil
		}
	}
}
