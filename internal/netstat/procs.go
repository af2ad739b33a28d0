package netstat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Process is a process holding a socket.
type Process struct {
	PID  int
	Name string
}

// Processes scans procRoot (/proc) once for every process's open
// sockets and its network namespace: socket inode → holder, and network
// namespace inode → one process in it. Processes that exit meanwhile, or
// that cannot be read, are left out.
func Processes(procRoot string) (sockets map[uint64]Process, netns map[uint64]int) {
	sockets, netns = map[uint64]Process{}, map[uint64]int{}

	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return sockets, netns
	}

	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}

		dir := filepath.Join(procRoot, e.Name())

		if ino, ok := inodeOf(filepath.Join(dir, "ns", "net")); ok {
			if _, seen := netns[ino]; !seen {
				netns[ino] = pid
			}
		}

		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}

		var name string

		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}

			ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
			if err != nil {
				continue
			}

			if name == "" {
				comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
				name = strings.TrimSpace(string(comm))
			}

			if _, seen := sockets[ino]; !seen {
				sockets[ino] = Process{PID: pid, Name: name}
			}
		}
	}

	return sockets, netns
}

// NamespaceInode is the inode of a network namespace file (a
// /var/run/netns bind mount or /proc/<pid>/ns/net).
func NamespaceInode(path string) (uint64, bool) { return inodeOf(path) }

func inodeOf(path string) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, false
	}

	return st.Ino, true
}
