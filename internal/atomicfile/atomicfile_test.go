package atomicfile_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/atomicfile"
)

// smallFS mounts a 64 KiB tmpfs on a fresh directory, so a write can run
// out of space for real. It needs root (CAP_SYS_ADMIN), as the node does.
func smallFS(t *testing.T) string {
	t.Helper()

	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Fatalf("mount a small tmpfs (this test needs root): %v", err)
	}

	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})

	return dir
}

func TestWrite(t *testing.T) {
	old := []byte("old content\n")

	tests := []struct {
		name string
		// dir makes the directory the file goes in (t.TempDir when nil).
		dir func(t *testing.T) string
		// file is the name written; existing is its content before, nil
		// when there is no file yet.
		file     string
		existing []byte
		// prepare runs after existing is written, to set a failure up.
		prepare func(t *testing.T, dir string)
		data    []byte
		perm    fs.FileMode
		opts    []atomicfile.Option
		// wantErr is matched with errors.Is; nil means success.
		wantErr error
		// wantOwner is checked when not nil (uid, gid).
		wantOwner []int
	}{
		{name: "new file", file: "f", data: []byte("new"), perm: 0o600},
		{name: "replaces the old content", file: "f", existing: old, data: []byte("new"), perm: 0o600},
		{name: "empty content", file: "f", existing: old, data: nil, perm: 0o600},
		// The umask (usually 022) must not narrow the mode asked for...
		{name: "mode wider than the umask", file: "f", data: []byte("x"), perm: 0o666},
		// ...and an old, wider mode must not survive a replace.
		{name: "narrower mode than the old file", file: "f", existing: old, data: []byte("x"), perm: 0o400,
			prepare: func(t *testing.T, dir string) {
				if err := os.Chmod(filepath.Join(dir, "f"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "owner set before the rename", file: "f", existing: old, data: []byte("x"), perm: 0o400,
			opts: []atomicfile.Option{atomicfile.WithOwner(65534, 65533)}, wantOwner: []int{65534, 65533}},
		{name: "missing directory", file: "missing/f", data: []byte("x"), perm: 0o600, wantErr: fs.ErrNotExist},
		{name: "rename fails: a directory in the way", file: "f", data: []byte("x"), perm: 0o600,
			prepare: func(t *testing.T, dir string) {
				if err := os.MkdirAll(filepath.Join(dir, "f", "inside"), 0o700); err != nil {
					t.Fatal(err)
				}
			}, wantErr: syscall.EEXIST}, // os.Rename checks for a directory itself
		{name: "disk full: the old content survives", dir: smallFS, file: "f", existing: old,
			data: bytes.Repeat([]byte("x"), 256<<10), perm: 0o600, wantErr: syscall.ENOSPC},
		{name: "disk full, no old file: nothing is left", dir: smallFS, file: "f",
			data: bytes.Repeat([]byte("x"), 256<<10), perm: 0o600, wantErr: syscall.ENOSPC},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.dir != nil {
				dir = tt.dir(t)
			}

			path := filepath.Join(dir, tt.file)

			if tt.existing != nil {
				if err := os.WriteFile(path, tt.existing, 0o600); err != nil {
					t.Fatal(err)
				}
			}

			if tt.prepare != nil {
				tt.prepare(t, dir)
			}

			before := entries(t, dir)

			err := atomicfile.Write(path, tt.data, tt.perm, tt.opts...)

			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want %v naming %s", err, tt.wantErr, path)
				}

				// The old file (or its absence) is untouched, and the
				// temporary file is gone.
				if tt.existing != nil {
					if got, _ := os.ReadFile(path); !bytes.Equal(got, tt.existing) {
						t.Errorf("after a failed write the file holds %q, want the old %q", got, tt.existing)
					}
				}

				if after := entries(t, dir); !equal(before, after) {
					t.Errorf("directory changed by a failed write: %v, was %v", after, before)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, tt.data) {
				t.Fatalf("content %q (%v), want %q", got, err, tt.data)
			}

			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}

			if st.Mode().Perm() != tt.perm {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), tt.perm)
			}

			if tt.wantOwner != nil {
				sys := st.Sys().(*syscall.Stat_t) //nolint:forcetypeassert // Linux
				if int(sys.Uid) != tt.wantOwner[0] || int(sys.Gid) != tt.wantOwner[1] {
					t.Errorf("owner %d:%d, want %d:%d", sys.Uid, sys.Gid, tt.wantOwner[0], tt.wantOwner[1])
				}
			}

			if after := entries(t, dir); len(after) != 1 || after[0] != filepath.Base(tt.file) {
				t.Errorf("directory holds %v, want only %s (temporary file left behind?)", after, tt.file)
			}
		})
	}
}

// A reader racing the writer sees one whole version or the other, never a
// mix or an empty file.
func TestWriteReadersSeeWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	versions := [][]byte{bytes.Repeat([]byte("a"), 8<<10), bytes.Repeat([]byte("b"), 4<<10)}

	if err := atomicfile.Write(path, versions[0], 0o600); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})

	var (
		wg  sync.WaitGroup
		bad []byte
	)

	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}

			got, err := os.ReadFile(path)
			if err != nil || (!bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1])) {
				bad = got

				return
			}
		}
	})

	for i := range 100 {
		if err := atomicfile.Write(path, versions[i%2], 0o600); err != nil {
			t.Fatal(err)
		}
	}

	close(done)
	wg.Wait()

	if bad != nil {
		t.Fatalf("a reader saw %d bytes that are neither version", len(bad))
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()

	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}

	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}

	return names
}

func equal(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }
