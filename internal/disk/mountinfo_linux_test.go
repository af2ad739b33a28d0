package disk

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const sampleMountInfo = `22 1 0:20 / / rw - rootfs rootfs rw
30 22 8:3 / /var rw,relatime shared:1 - xfs /dev/sda5 rw
31 30 8:3 /lib/kubelet /var/lib/kubelet rw,relatime shared:2 - xfs /dev/sda5 rw
40 31 0:50 / /var/lib/kubelet/pods/a/volumes/kubernetes.io~projected/kube-api-access-x rw shared:2 - tmpfs tmpfs rw
41 31 0:51 / /var/lib/kubelet/pods/b/volumes/kubernetes.io~projected/kube-api-access-y rw shared:2 - tmpfs tmpfs rw
42 30 0:52 / /var/my\040dir rw - tmpfs my\040src rw
43 22 0:53 / /variable rw - tmpfs tmpfs rw
44 22 0:54 / /run rw - tmpfs tmpfs rw
garbage line
`

func TestReadMountInfo(t *testing.T) {
	mounts, err := ReadMountInfo(strings.NewReader(sampleMountInfo))
	if err != nil {
		t.Fatal(err)
	}

	if len(mounts) != 8 {
		t.Fatalf("got %d mounts, want 8 (the garbage line skipped): %+v", len(mounts), mounts)
	}

	if got := mounts[5]; got != (MountEntry{MountPoint: "/var/my dir", FSType: "tmpfs", Source: "my src"}) {
		t.Errorf("escaped line: got %+v", got)
	}

	if got := mounts[1]; got != (MountEntry{MountPoint: "/var", FSType: "xfs", Source: "/dev/sda5"}) {
		t.Errorf("optional fields: got %+v", got)
	}
}

func TestBeneath(t *testing.T) {
	mounts, err := ReadMountInfo(strings.NewReader(sampleMountInfo))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{"/var", []string{
			"/var/lib/kubelet/pods/b/volumes/kubernetes.io~projected/kube-api-access-y",
			"/var/lib/kubelet/pods/a/volumes/kubernetes.io~projected/kube-api-access-x",
			"/var/lib/kubelet",
			"/var/my dir",
		}},
		{"/var/", []string{
			"/var/lib/kubelet/pods/b/volumes/kubernetes.io~projected/kube-api-access-y",
			"/var/lib/kubelet/pods/a/volumes/kubernetes.io~projected/kube-api-access-x",
			"/var/lib/kubelet",
			"/var/my dir",
		}},
		{"/run", nil},
		{"/nothing", nil},
	} {
		if got := Beneath(mounts, tc.dir); !slices.Equal(got, tc.want) {
			t.Errorf("Beneath(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

// TestUnmountTree builds what the kubelet leaves on EPHEMERAL: a volume, a
// shared bind of a directory on it, and a tmpfs under the bind, with a
// file open on the tmpfs. A plain unmount of the volume fails with EBUSY;
// UnmountTree takes it down.
func TestUnmountTree(t *testing.T) {
	base := t.TempDir()
	vol := filepath.Join(base, "var")
	kubelet := filepath.Join(vol, "lib", "kubelet")
	token := filepath.Join(kubelet, "pods", "p", "token")

	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}

	if err := unix.Mount("tmpfs", vol, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount the volume (this test needs root): %v", err)
	}

	t.Cleanup(func() { unix.Unmount(vol, unix.MNT_DETACH) }) //nolint:errcheck // already gone when the test passes

	if err := os.MkdirAll(token, 0o755); err != nil {
		t.Fatal(err)
	}

	if err := unix.Mount(kubelet, kubelet, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}

	if err := unix.Mount("", kubelet, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}

	if err := unix.Mount("tmpfs", token, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}

	// A file held open on the pod's volume: that submount cannot be
	// unmounted cleanly and must be detached.
	held, err := os.Create(filepath.Join(token, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	if err := unix.Unmount(vol, 0); err != unix.EBUSY {
		t.Fatalf("a plain unmount of the volume: got %v, want EBUSY (the setup is wrong)", err)
	}

	if err := UnmountTree(vol); err != nil {
		t.Fatalf("UnmountTree: %v", err)
	}

	mounts, err := Mounts()
	if err != nil {
		t.Fatal(err)
	}

	for _, m := range mounts {
		if m.MountPoint == vol || strings.HasPrefix(m.MountPoint, vol+"/") {
			t.Errorf("still mounted after UnmountTree: %s", m.MountPoint)
		}
	}
}
