package imagebuild

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The kubelet image's NFS helper runs on its own: mount.nfs from Debian's
// nfs-common, in a chroot of just what nfsFiles collected (no library of
// this machine's to fall back on), under each name mount(8) looks for.
func TestNFSClientRunsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}

	cache := t.TempDir()
	if c := os.Getenv("TALOSBOX_IMAGE_CACHE"); c != "" {
		cache = c // the nfs-common make images unpacked
	}

	var log bytes.Buffer

	b := &builder{opts: Options{Cache: cache, Log: &log}}

	root, _, err := b.debRoot(context.Background(), "nfs-common", []string{"nfs-common"})
	if err != nil {
		t.Fatal(err)
	}

	h, err := nfsFiles(root)
	if err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "kubelet")
	if err := writeTree(dir, h.entries()); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(filepath.Join(dir, "usr/bin/python3")); !os.IsNotExist(err) {
		t.Errorf("python3 is in the layer: %v", err)
	}

	// umount has no -V: its usage says it ran (its exit status is 1).
	for name, want := range map[string]string{"mount.nfs": "nfs-utils", "mount.nfs4": "nfs-utils", "umount.nfs4": "usage: umount.nfs4"} {
		cmd := exec.Command("/sbin/"+name, "-V")
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: dir}
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/sbin"}

		out, err := cmd.CombinedOutput()
		if strings.HasPrefix(name, "umount") {
			err = nil
		}

		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s -V in the layer alone: %v: %s", name, err, out)
		}
	}

	if b, err := os.ReadFile(filepath.Join(dir, "etc/netconfig")); err != nil || !bytes.Contains(b, []byte("tcp")) {
		t.Errorf("/etc/netconfig: %v\n%s", err, b)
	}
}
