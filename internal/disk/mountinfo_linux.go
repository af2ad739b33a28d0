package disk

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MountEntry is one line of /proc/self/mountinfo, with the escapes undone.
type MountEntry struct {
	MountPoint string
	FSType     string
	Source     string
}

// ReadMountInfo parses the mountinfo format, in the kernel's order
// (mount order). Malformed lines are skipped: the kernel writes them.
func ReadMountInfo(r io.Reader) ([]MountEntry, error) {
	var mounts []MountEntry

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)

	for sc.Scan() {
		// "id parent maj:min root mountpoint options [optional...] - fstype source superoptions"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}

		f, p := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(p) < 2 {
			continue
		}

		mounts = append(mounts, MountEntry{MountPoint: unescapeMount(f[4]), FSType: p[0], Source: unescapeMount(p[1])})
	}

	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}

	return mounts, nil
}

// Mounts reads this process's mount table.
func Mounts() ([]MountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()

	return ReadMountInfo(f)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}

	var b strings.Builder

	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3

				continue
			}
		}

		b.WriteByte(s[i])
	}

	return b.String()
}

// Beneath lists the mount points strictly below dir, in the order to
// unmount them: deepest first and, at one depth, last mounted first.
// A path mounted twice is listed twice: each unmount removes one.
func Beneath(mounts []MountEntry, dir string) []string {
	dir = filepath.Clean(dir)
	prefix := dir + "/"

	if dir == "/" {
		prefix = "/"
	}

	var under []string

	for i := len(mounts) - 1; i >= 0; i-- {
		mp := mounts[i].MountPoint
		if mp != dir && strings.HasPrefix(mp, prefix) {
			under = append(under, mp)
		}
	}

	slices.SortStableFunc(under, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})

	return under
}

// UnmountTree unmounts everything mounted below target, then target. A
// volume stays busy while anything is mounted on it: the kubelet's shared
// bind of /var/lib/kubelet and the pods' volumes under it pin EPHEMERAL.
// A submount that stays busy is detached, which unpins the volume; target
// itself is never detached, so a wipe cannot start under a live mount.
func UnmountTree(target string) error {
	mounts, err := Mounts()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unmount %s: %w", target, err)
	}

	for _, mp := range Beneath(mounts, target) {
		err := unix.Unmount(mp, 0)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(mp, unix.MNT_DETACH)
		}

		if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: gone with its parent
			return fmt.Errorf("unmount %s below %s: %w", mp, target, err)
		}
	}

	return Unmount(target)
}
