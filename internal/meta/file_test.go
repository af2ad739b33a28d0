package meta_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/meta"
)

func writeImage(t *testing.T, img []byte) string {
	t.Helper()

	p := filepath.Join(t.TempDir(), "meta.img")
	if err := os.WriteFile(p, img, 0o600); err != nil {
		t.Fatal(err)
	}

	return p
}

func readImage(t *testing.T, path string) []byte {
	t.Helper()

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	return b
}

// A blank partition (as the install's wipe leaves it) is an empty META;
// the first write formats it, and what is written is what was set.
func TestOpenEditFlush(t *testing.T) {
	path := writeImage(t, make([]byte, partLen))

	m, err := meta.Open(path)
	if err != nil {
		t.Fatal(err)
	}

	if !m.Blank() || len(m.List()) != 0 {
		t.Fatalf("blank %v, tags %v", m.Blank(), m.List())
	}

	// Nothing to change: a blank partition stays blank.
	if _, _, err := meta.Edit(path, nil); err != nil || !isZeroBytes(readImage(t, path)) {
		t.Fatalf("a no-op edit wrote to a blank partition (%v)", err)
	}

	if _, err := m.SetTag(meta.UserReserved1, []byte("hello")); err != nil {
		t.Fatal(err)
	}

	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}

	b := block(rec(0x0c, "hello"))
	if got := readImage(t, path); !bytes.Equal(got, image(b, b, nil)) {
		t.Fatalf("flushed image differs at byte %d", firstDiff(got, image(b, b, nil)))
	}

	got, _, err := meta.Edit(path, func(m *meta.Meta) error {
		if !m.DeleteTag(meta.UserReserved1) {
			t.Error("0x0c not found")
		}

		_, err := m.SetTag(meta.Upgrade, []byte("A"))

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	if v, ok := got.ReadTag(meta.Upgrade); !ok || string(v) != "A" || len(got.List()) != 1 {
		t.Fatalf("edit returned %v", got.List())
	}

	b = block(rec(0x06, "A"))
	if !bytes.Equal(readImage(t, path), image(b, b, nil)) {
		t.Fatal("edited image is not the expected one")
	}

	// A failing edit writes nothing.
	boom := errors.New("boom")
	if _, _, err := meta.Edit(path, func(m *meta.Meta) error { m.DeleteTag(meta.Upgrade); return boom }); !errors.Is(err, boom) {
		t.Fatalf("edit error %v", err)
	}

	if !bytes.Equal(readImage(t, path), image(b, b, nil)) {
		t.Fatal("a failed edit wrote")
	}
}

// OpenFile works on a file the caller holds, as the installer does.
func TestOpenFile(t *testing.T) {
	path := writeImage(t, make([]byte, partLen))

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	m, err := meta.OpenFile(f)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := m.SetTag(meta.DownloadURLCode, []byte("abc")); err != nil {
		t.Fatal(err)
	}

	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}

	back, err := meta.Open(path)
	if err != nil {
		t.Fatal(err)
	}

	if v, _ := back.ReadTag(meta.DownloadURLCode); string(v) != "abc" {
		t.Fatalf("read back %q", v)
	}
}

// Readers share the lock; an edit holds it exclusively from its read to
// its write, so no other process reads half a write or slips a change in.
func TestLocks(t *testing.T) {
	path := writeImage(t, make([]byte, partLen))

	other, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	tryLock := func(how int) error { return unix.Flock(int(other.Fd()), how|unix.LOCK_NB) }

	// A reader elsewhere does not keep Open out.
	if err := tryLock(unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}

	if _, err := meta.Open(path); err != nil {
		t.Fatal(err)
	}

	if err := unix.Flock(int(other.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}

	_, _, err = meta.Edit(path, func(m *meta.Meta) error {
		if err := tryLock(unix.LOCK_SH); !errors.Is(err, unix.EWOULDBLOCK) {
			t.Errorf("a shared lock was granted during an edit: %v", err)
		}

		_, err := m.SetTag(meta.UserReserved2, []byte("x"))

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// Released after the edit.
	if err := tryLock(unix.LOCK_EX); err != nil {
		t.Fatalf("lock still held after the edit: %v", err)
	}
}

func TestFlushWithoutTarget(t *testing.T) {
	m, _ := meta.New(partLen)
	if err := m.Flush(); err == nil {
		t.Fatal("a META made by New flushed to nowhere")
	}

	if _, err := meta.Open(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open of a missing file: %v", err)
	}
}

// Concurrent edits, each through its own open file as separate processes
// would, lose none of each other's changes.
func TestConcurrentEdits(t *testing.T) {
	path := writeImage(t, make([]byte, partLen))

	const writers = 16

	errs := make(chan error, writers)

	for i := range writers {
		go func() {
			_, _, err := meta.Edit(path, func(m *meta.Meta) error {
				_, err := m.SetTag(uint8(0x20+i), []byte{byte(i)})
				return err
			})
			errs <- err
		}()
	}

	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	m, err := meta.Open(path)
	if err != nil {
		t.Fatal(err)
	}

	if got := m.List(); len(got) != writers {
		t.Fatalf("%d of %d tags survived: %v", len(got), writers, got)
	}
}
