package modprobe

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/applet"
)

// What the kernel's own calls get: a name no module answers to fails
// (quietly with -q, as the kernel passes it), a built-in one succeeds
// with nothing to load, and a malformed request is a usage error.
func TestKernelRequests(t *testing.T) {
	dir := t.TempDir()

	for name, data := range map[string]string{
		"modules.dep":     "kernel/fs/nfs/nfs.ko:\n",
		"modules.builtin": "kernel/net/packet/af_packet.ko\n",
		"modules.alias":   "alias fs-nfs4 nfs\nalias net-pf-17 af_packet\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		args       []string
		code       int
		wantStderr string
	}{
		{[]string{"-d", dir, "-q", "--", "fs-btrfs"}, 1, ""},
		{[]string{"-d", dir, "fs-btrfs"}, 1, "fs-btrfs: module not found in " + dir},
		{[]string{"-d", dir, "-q", "--", "net-pf-17"}, 0, ""}, // built in
		{[]string{"-d", dir, "-a", "af_packet", "fs-xfs"}, 1, "fs-xfs: module not found"},
		{[]string{"-d", dir}, 1, "Usage: modprobe"},
		{[]string{"-d", filepath.Join(dir, "none"), "nfs"}, 1, "modules.dep"},
	} {
		var stdout, stderr bytes.Buffer

		code := Main(context.Background(), tt.args, applet.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
		if code != tt.code || (tt.wantStderr == "") != (stderr.Len() == 0) || !strings.Contains(stderr.String(), tt.wantStderr) {
			t.Errorf("modprobe %q: exit %d, stderr %q; want %d, %q", tt.args, code, stderr.String(), tt.code, tt.wantStderr)
		}
	}
}
