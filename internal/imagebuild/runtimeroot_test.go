package imagebuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The node's runtime root must run on its own: iptables in a chroot of
// just that tree, as the portmap CNI plugin runs it on a node, with no
// library of this machine's to fall back on.
func TestRuntimeRootRunsIptablesAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}

	b := &builder{opts: Options{Out: t.TempDir()}}

	// Twice: the second build replaces the first whole.
	for range 2 {
		if err := b.runtimeRoot(); err != nil {
			t.Fatal(err)
		}
	}

	root := b.res.RuntimeRoot
	if root != filepath.Join(b.opts.Out, "runtime", "root") {
		t.Fatalf("RuntimeRoot %q", root)
	}

	if _, err := os.Stat(root + ".new"); !os.IsNotExist(err) {
		t.Errorf("the staging tree is left: %v", err)
	}

	if target, err := os.Readlink(filepath.Join(root, "usr/sbin/iptables")); err != nil || target != "xtables-nft-multi" {
		t.Errorf("iptables: %q %v, want a link to xtables-nft-multi", target, err)
	}

	for _, args := range [][]string{
		{"/usr/sbin/iptables", "--version"},        // nf_tables backend, as kube-proxy's image has it
		{"/usr/sbin/iptables-legacy", "--version"}, // and legacy beside it
		{"/usr/sbin/nft", "--version"},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/sbin"}

		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%v in the runtime root alone: %v: %s", args, err, out)

			continue
		}

		t.Logf("%v: %s", args, strings.TrimSpace(string(out)))

		if args[0] == "/usr/sbin/iptables" && !strings.Contains(string(out), "nf_tables") {
			t.Errorf("iptables is not the nf_tables one: %s", out)
		}
	}
}
