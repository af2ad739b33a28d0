package platform

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/disk"
)

// mountPoint is one pseudo filesystem PID 1 mounts on metal.
type mountPoint struct {
	target, fstype, source, data string
	flags                        uintptr
	mode                         os.FileMode
}

// metalMounts are mounted in order: /proc first, because the rest check
// /proc/self/mountinfo to skip what the initramfs already mounted.
var metalMounts = []mountPoint{
	{"/proc", "proc", "proc", "", unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV, 0o555},
	{"/sys", "sysfs", "sysfs", "", unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV, 0o555},
	{"/dev", "devtmpfs", "devtmpfs", "mode=0755", unix.MS_NOSUID, 0o755},
	{"/dev/pts", "devpts", "devpts", "ptmxmode=000,mode=620,gid=5", unix.MS_NOSUID | unix.MS_NOEXEC, 0o755},
	{"/dev/shm", "tmpfs", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV, 0o1777},
	{"/run", "tmpfs", "tmpfs", "mode=0755", unix.MS_NOSUID | unix.MS_NODEV, 0o755},
	{"/tmp", "tmpfs", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV, 0o1777},
	{"/system", "tmpfs", "tmpfs", "mode=0755", unix.MS_NOSUID | unix.MS_NODEV, 0o755},
	{"/sys/fs/cgroup", "cgroup2", "cgroup2", "nsdelegate", unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV, 0o555},
}

// MountPseudo mounts /proc, /sys, /dev, /dev/pts, /dev/shm, /run, /tmp,
// /system and cgroup2, skipping any that is already mounted. Metal only.
func MountPseudo(log io.Writer) error {
	for _, m := range metalMounts {
		mounted, err := isMounted(m.target)
		if err != nil && m.target != "/proc" {
			return err
		}

		if mounted {
			fmt.Fprintf(log, "%s already mounted\n", m.target)
			continue
		}

		if err := os.MkdirAll(m.target, m.mode); err != nil {
			return fmt.Errorf("mount %s: %w", m.target, err)
		}

		if err := unix.Mount(m.source, m.target, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s (%s): %w", m.target, m.fstype, err)
		}
	}

	return nil
}

// isMounted reports whether target is a mount point, from mountinfo.
func isMounted(target string) (bool, error) {
	mounts, err := disk.Mounts()
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}

	if err != nil {
		return false, err
	}

	for _, m := range mounts {
		if m.MountPoint == target {
			return true, nil
		}
	}

	return false, nil
}

// UnmountAll syncs and unmounts what MountPseudo mounted, in reverse,
// ignoring busy mounts: the kernel is about to reboot anyway.
func UnmountAll() {
	unix.Sync()

	for i := len(metalMounts) - 1; i >= 0; i-- {
		unix.Unmount(metalMounts[i].target, unix.MNT_DETACH) //nolint:errcheck // best effort before reboot
	}
}
