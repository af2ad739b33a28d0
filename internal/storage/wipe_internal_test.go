package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/disk"
)

// A Docker node's /var, as a reset finds it: containerd's content and
// snapshots, the kubelet's certificates and a pod's secret volume (a
// tmpfs), pod logs, etcd's data, and the node's volume below
// /var/lib/talosbox holding STATE and the node's /etc (a mount too).
func TestWipeEphemeralOfADockerNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to mount (make test runs as root)")
	}

	v := t.TempDir()
	state := filepath.Join(v, "lib/talosbox/state")
	etc := filepath.Join(v, "lib/talosbox/etc")
	secret := filepath.Join(v, "lib/kubelet/pods/1234/volumes/kubernetes.io~secret/token")

	for _, d := range []string{filepath.Join(v, "lib/talosbox"), secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The node's volume, then what is below it.
	if err := unix.Mount("none", filepath.Join(v, "lib/talosbox"), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { disk.UnmountTree(filepath.Join(v, "lib/talosbox")) }) //nolint:errcheck // best effort

	if err := unix.Mount("none", secret, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { unix.Unmount(secret, unix.MNT_DETACH) }) //nolint:errcheck // gone when the wipe worked

	files := map[string]bool{ // path below v: kept
		"lib/containerd/io.containerd.metadata.v1.bolt/meta.db":                  false,
		"lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs/x": false,
		"lib/kubelet/pki/kubelet-client-current.pem":                             false,
		"lib/kubelet/pods/1234/volumes/kubernetes.io~secret/token/token":         false,
		"log/pods/kube-system_flannel/0.log":                                     false,
		"lib/talosbox/ephemeral/lib/etcd/member/snap/db":                         false,
		"tmp/scratch":                    false,
		"lib/talosbox/state/config.yaml": true,
		"lib/talosbox/etc/hostname":      true,
	}

	for f := range files {
		p := filepath.Join(v, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(p, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.Chmod(filepath.Join(v, "tmp"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}

	keep := []string{state, etc}
	if err := unmountBelow(v, keep); err != nil {
		t.Fatal(err)
	}

	removed, err := WipeExcept(v, keep...)
	if err != nil {
		t.Fatal(err)
	}

	for f, kept := range files {
		if _, err := os.Stat(filepath.Join(v, f)); (err == nil) != kept {
			t.Errorf("%s: exists %v after the wipe, want %v", f, err == nil, kept)
		}
	}

	want := []string{"lib/containerd", "lib/kubelet", "lib/talosbox/ephemeral", "log/pods", "tmp/scratch"}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}

	// The directories right below /var stay, with their modes.
	if st, err := os.Stat(filepath.Join(v, "tmp")); err != nil || st.Mode()&(os.ModePerm|os.ModeSticky) != 0o777|os.ModeSticky {
		t.Errorf("/var/tmp after the wipe: %v, %v", st, err)
	}

	// The node's volume is still mounted.
	mounts, err := disk.Mounts()
	if err != nil {
		t.Fatal(err)
	}

	if got := disk.Beneath(mounts, v); !slices.Equal(got, []string{filepath.Join(v, "lib/talosbox")}) {
		t.Errorf("mounted below /var after the wipe: %q, want only the node's volume", got)
	}
}
