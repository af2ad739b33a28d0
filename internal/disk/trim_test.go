package disk_test

import (
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/disk"
)

// loopMount makes a filesystem of type fs on a sparse image, attaches it
// to a loop device and mounts it (without the discard option, so freed
// blocks stay allocated in the image until a trim); all of it is undone
// with the test. It returns the image and the mount point.
func loopMount(t *testing.T, fs string) (img, mnt string) {
	t.Helper()

	if os.Geteuid() != 0 {
		t.Fatal("loop devices need root")
	}

	// mkfs.xfs wants at least 300 MB.
	img = image(t, 512*disk.MiB)

	mkfs := map[string][]string{
		"ext4": {tool(t, "mkfs.ext4", "e2fsprogs"), "-q", "-F", img},
		"xfs":  {tool(t, "mkfs.xfs", "xfsprogs"), "-q", "-f", img},
	}[fs]

	if out, err := exec.Command(mkfs[0], mkfs[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", mkfs[0], err, out)
	}

	out, err := exec.Command(tool(t, "losetup", "mount"), "--find", "--show", img).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}

	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() }) //nolint:errcheck

	mnt = t.TempDir()
	if err := syscall.Mount(loop, mnt, fs, 0, ""); err != nil {
		t.Fatalf("mount %s (%s): %v", loop, fs, err)
	}

	t.Cleanup(func() { syscall.Unmount(mnt, 0) }) //nolint:errcheck

	return img, mnt
}

// allocated is how much of the sparse image holds data.
func allocated(t *testing.T, img string) int64 {
	t.Helper()

	var st syscall.Stat_t
	if err := syscall.Stat(img, &st); err != nil {
		t.Fatal(err)
	}

	return st.Blocks * 512
}

// free is the free space of the filesystem at mnt, once written back.
func free(t *testing.T, mnt string) int64 {
	t.Helper()

	syscall.Sync()

	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}

	return int64(st.Bfree) * st.Bsize
}

// waitFree waits until the filesystem at mnt has at least want bytes free.
func waitFree(t *testing.T, mnt string, want int64) {
	t.Helper()

	deadline := time.Now().Add(30 * time.Second)

	for got := free(t, mnt); got < want; got = free(t, mnt) {
		if time.Now().After(deadline) {
			t.Fatalf("the filesystem has %d bytes free, still not the %d it had before the file", got, want)
		}

		time.Sleep(10 * time.Millisecond)
	}
}

// TestTrim: a file written and deleted leaves its blocks allocated in
// the loop device's image; a trim discards them, and the image gives the
// space back (the loop driver punches holes for discards).
func TestTrim(t *testing.T) {
	const size = 96 * disk.MiB

	for _, fs := range []string{"ext4", "xfs"} {
		t.Run(fs, func(t *testing.T) {
			img, mnt := loopMount(t, fs)

			data := make([]byte, size)
			if _, err := rand.Read(data); err != nil {
				t.Fatal(err)
			}

			freeBefore := free(t, mnt)

			file := filepath.Join(mnt, "data")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}

			syscall.Sync()

			written := allocated(t, img)

			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}

			// XFS frees an unlinked file's blocks in the background: the
			// trim is for blocks the filesystem holds free.
			waitFree(t, mnt, freeBefore-disk.MiB)

			if freed := written - allocated(t, img); freed > size/2 {
				t.Fatalf("deleting the file freed %d bytes of the image before any trim: the test cannot tell a trim", freed)
			}

			trimmed, err := disk.Trim(mnt)
			if err != nil {
				t.Fatal(err)
			}

			after := allocated(t, img)
			t.Logf("%s: image %d MiB allocated with the file, %d MiB after the trim; the filesystem trimmed %d MiB",
				fs, written/disk.MiB, after/disk.MiB, trimmed/disk.MiB)

			if trimmed < size {
				t.Errorf("trimmed %d bytes, want at least the deleted file's %d", trimmed, size)
			}

			if written-after < size*9/10 {
				t.Errorf("the image holds %d bytes after the trim, %d before: the trim gave back %d, want about %d",
					after, written, written-after, size)
			}
		})
	}
}

// TestTrimUnsupported: a filesystem without FITRIM says so, as
// ErrTrimUnsupported, which the trim controller passes over.
func TestTrimUnsupported(t *testing.T) {
	if _, err := disk.Trim("/proc"); !errors.Is(err, disk.ErrTrimUnsupported) {
		t.Fatalf("trim of /proc: %v, want ErrTrimUnsupported", err)
	}

	if _, err := disk.Trim(filepath.Join(t.TempDir(), "missing")); err == nil || errors.Is(err, disk.ErrTrimUnsupported) {
		t.Fatalf("trim of a missing directory: %v, want the open error", err)
	}
}
