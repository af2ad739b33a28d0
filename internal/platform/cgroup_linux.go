package platform

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// CgroupRoot is where runc and containerd expect the cgroup hierarchies.
const CgroupRoot = "/sys/fs/cgroup"

// hierarchy is one line of /proc/self/cgroup: a cgroup v1 hierarchy and
// the controllers bound to it ("cpu,cpuacct", "name=systemd"), or the v2
// unified hierarchy (controllers "").
type hierarchy struct {
	id          string
	controllers string
}

// parseProcCgroup reads /proc/self/cgroup's "ID:CONTROLLERS:PATH" lines.
func parseProcCgroup(r io.Reader) ([]hierarchy, error) {
	var out []hierarchy

	sc := bufio.NewScanner(r)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("malformed /proc/self/cgroup line %q", sc.Text())
		}

		out = append(out, hierarchy{id: parts[0], controllers: parts[1]})
	}

	return out, sc.Err()
}

// cgroupMount is one mount MountCgroupsWritable makes under root.
type cgroupMount struct {
	dir, fstype, data string
}

// cgroupPlan says what to mount for the hierarchies: cgroup2 alone when
// the unified hierarchy is all there is, otherwise a tmpfs with each v1
// hierarchy in a directory named after its controllers (name=systemd is
// "systemd"), and symlinks for each controller of a combined hierarchy
// ("cpu" → "cpu,cpuacct"), as systemd lays it out.
func cgroupPlan(hs []hierarchy) (mounts []cgroupMount, links map[string]string) {
	if len(hs) == 1 && hs[0].controllers == "" {
		return []cgroupMount{{dir: "", fstype: "cgroup2"}}, nil
	}

	links = map[string]string{}
	mounts = []cgroupMount{{dir: "", fstype: "tmpfs", data: "mode=0755"}}

	for _, h := range hs {
		if h.controllers == "" {
			continue // the v2 hierarchy of a hybrid host; v1 runc ignores it
		}

		dir := strings.TrimPrefix(h.controllers, "name=")
		mounts = append(mounts, cgroupMount{dir: dir, fstype: "cgroup", data: h.controllers})

		if ctrls := strings.Split(h.controllers, ","); len(ctrls) > 1 {
			for _, c := range ctrls {
				links[c] = dir
			}
		}
	}

	slices.SortFunc(mounts[1:], func(a, b cgroupMount) int { return strings.Compare(a.dir, b.dir) })

	return mounts, links
}

// MountCgroupsWritable makes the cgroup hierarchies writable for runc in
// container mode. A Docker node gets them read-only (Docker mounts them
// so unless the container is privileged, which this engine refuses), in a
// cgroup namespace of its own; mounting them anew there gives the node
// its own subtree, read-write. Nothing is done when they are writable.
func MountCgroupsWritable(log io.Writer) error {
	if unix.Access(CgroupRoot, unix.W_OK) == nil && writableMount(CgroupRoot) {
		if ents, _ := os.ReadDir(CgroupRoot); len(ents) > 0 && allWritable(ents) {
			return nil
		}
	}

	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}

	hs, err := parseProcCgroup(f)
	f.Close()

	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}

	mounts, links := cgroupPlan(hs)

	for _, m := range mounts {
		target := filepath.Join(CgroupRoot, m.dir)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}

		if err := unix.Mount(m.fstype, target, m.fstype, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, m.data); err != nil {
			return fmt.Errorf("cgroups: mount %s (%s %s): %w", target, m.fstype, m.data, err)
		}
	}

	for c, dir := range links {
		if err := os.Symlink(dir, filepath.Join(CgroupRoot, c)); err != nil && !os.IsExist(err) {
			return fmt.Errorf("cgroups: %w", err)
		}
	}

	fmt.Fprintf(log, "[talos] mounted %d cgroup hierarchies read-write under %s\n", len(mounts), CgroupRoot)

	allowAllDevices(log)

	return nil
}

// allowAllDevices widens the node's device cgroup (v1) to every device,
// as a privileged container has it. An engine that refuses privileged
// containers leaves the node Docker's short list, and runc cannot then
// create a privileged container (the kubelet, kube-proxy, flannel): it
// writes "a *:* rwm" to the child's devices.allow, which the kernel refuses
// beyond what the parent allows. The node's own cgroup may be widened, as
// its parent (Docker's) allows all; failing that, privileged containers
// fail with a clear runc error, and the node says so here.
func allowAllDevices(log io.Writer) {
	dir := filepath.Join(CgroupRoot, "devices")

	list, err := os.ReadFile(filepath.Join(dir, "devices.list"))
	if err != nil || strings.TrimSpace(string(list)) == "a *:* rwm" {
		return
	}

	if err := os.WriteFile(filepath.Join(dir, "devices.allow"), []byte("a"), 0); err != nil {
		fmt.Fprintf(log, "[talos] devices cgroup: cannot allow every device (%v): privileged containers will fail\n", err)
		return
	}

	fmt.Fprintf(log, "[talos] devices cgroup: every device allowed, as for a privileged node\n")
}

// writableMount reports whether the mount holding p is not read-only.
func writableMount(p string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return false
	}

	return st.Flags&unix.ST_RDONLY == 0
}

func allWritable(ents []os.DirEntry) bool {
	for _, e := range ents {
		if e.IsDir() && !writableMount(filepath.Join(CgroupRoot, e.Name())) {
			return false
		}
	}

	return true
}

// MakeRootShared marks every mount shared (mount --make-rshared /).
func MakeRootShared() error {
	if err := unix.Mount("", "/", "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make / shared: %w", err)
	}

	return nil
}

// MakeSharedMount makes dir a shared mount of its own (a bind mount onto
// itself, then mount --make-rshared): what a metal node does for the
// kubelet's /var/lib/kubelet, so the pods' volumes the kubelet mounts in
// its container reach containerd's. The root stays private: runc enters
// containers there with MS_MOVE (no pivot_root out of an initramfs), and
// the unmounts it does on the way would reach a shared root. The bind
// pins the volume under it; disk.UnmountTree takes it down first.
func MakeSharedMount(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dir, err)
	}

	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s shared: %w", dir, err)
	}

	return nil
}
