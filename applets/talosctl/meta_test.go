package talosctl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/apid/apidtest"
	"github.com/talosbox/talosbox/internal/meta"
)

// Arguments are checked before any node is dialled; --insecure follows
// the subcommand (a persistent flag, as in Talos 1.11).
func TestMetaArguments(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"meta", "write", "0x0c"}, "error: accepts 2 arg(s), received 1"},
		{[]string{"meta", "delete"}, "error: accepts 1 arg(s), received 0"},
		{[]string{"meta", "write", "0x100", "v"}, `error: invalid META key "0x100": want a number from 0x01 to 0xff`},
		{[]string{"meta", "delete", "zero"}, `error: invalid META key "zero"`},
		{[]string{"meta", "write", "0", "v"}, `error: invalid META key "0": 0x00 marks the end of the records`},
		{[]string{"meta", "write", "--insecure", "0x0c", "v"}, "error: --insecure needs the nodes to reach: use --nodes"},
		{[]string{"meta", "-i", "delete", "12"}, "error: --insecure needs the nodes to reach: use --nodes"},
	}

	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCtl(tt.args...)
			if code != 1 || stdout != "" || !strings.HasPrefix(stderr, tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and %q", code, stdout, stderr, tt.stderr)
			}
		})
	}

	_, stdout, _ := runCtl("meta", "--help")
	for _, want := range []string{"write       Write a key-value pair to the META partition.", "delete      Delete a key from the META partition.", "-i, --insecure   write|delete meta using the insecure"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("meta --help lacks %q:\n%s", want, stdout)
		}
	}
}

// write and delete against a node with META and one without: the first
// changes, `get meta` shows it, the second says why it cannot.
func TestMetaCommands(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runCtl("gen", "config", "meta", "https://10.5.0.2:6443", "-o", dir); code != 0 {
		t.Fatalf("gen config: %s", errOut)
	}

	m, _ := meta.New(1 << 20)
	img, _ := m.Encode()

	metaPath := filepath.Join(dir, "meta.img")
	if err := os.WriteFile(metaPath, img, 0o600); err != nil {
		t.Fatal(err)
	}

	start := func(name, ip, metaPath string) *apidtest.Node {
		cfg := filepath.Join(dir, name+".yaml")
		if code, _, errOut := runCtl("machineconfig", "patch", filepath.Join(dir, "controlplane.yaml"),
			"-p", fmt.Sprintf("machine: {certSANs: [%s]}\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: %s\n", ip, name), "-o", cfg); code != 0 {
			t.Fatalf("machineconfig patch: %s", errOut)
		}

		return apidtest.Start(t, apidtest.Options{Dir: filepath.Join(dir, name), ConfigPath: cfg, IP: ip, Name: name, MetaPath: metaPath})
	}

	metal := start("metal", "127.0.0.1", metaPath)
	box := start("box", "127.0.0.2", "")

	talosconfig := filepath.Join(dir, "talosconfig")
	on := func(nodes string, args ...string) (int, string, string) {
		out, errOut := newOutput(), newOutput()
		code := ctl(context.Background(), out, errOut, append([]string{"--talosconfig", talosconfig, "-e", metal.Addr, "-n", nodes}, args...)...)

		return code, out.String(), errOut.String()
	}

	if code, out, errOut := on(metal.Addr, "meta", "write", "0x0c", "hello world"); code != 0 || out != "" || errOut != "" {
		t.Fatalf("meta write: exit %d, %q, %q", code, out, errOut)
	}

	code, out, errOut := on(metal.Addr, "get", "meta", "0x0c")
	if code != 0 || !strings.Contains(out, "VALUE") || !strings.Contains(out, "runtime     MetaKey   0x0c   ") || !strings.HasSuffix(out, "hello world\n") {
		t.Fatalf("get meta: exit %d\n%s%s", code, out, errOut)
	}

	if v, err := meta.Open(metaPath); err != nil || len(v.List()) != 1 {
		t.Fatalf("the image holds %v (%v)", v, err)
	}

	// One node without META: its error, the other's success, exit 1.
	code, _, errOut = on(metal.Addr+","+box.Addr, "meta", "write", "12", "again")
	if code != 1 || errOut != "error on node "+box.Addr+": meta write: this node has no META partition: it runs in a container: META is a partition of a metal node's system disk\n" {
		t.Fatalf("meta write on both: exit %d, stderr %q", code, errOut)
	}

	if code, _, errOut = on(metal.Addr, "meta", "delete", "0x0c"); code != 0 || errOut != "" {
		t.Fatalf("meta delete: exit %d, %q", code, errOut)
	}

	if code, _, errOut = on(metal.Addr, "meta", "delete", "0x0c"); code != 1 || !strings.Contains(errOut, "meta delete: key 0x0c not found") {
		t.Fatalf("second meta delete: exit %d, %q", code, errOut)
	}

	// A reader is refused.
	readerCfg := filepath.Join(t.TempDir(), "talosconfig")
	if code, _, errOut := on(metal.Addr, "config", "new", readerCfg, "--roles", "os:reader"); code != 0 {
		t.Fatalf("config new: %s", errOut)
	}

	out2, errOut2 := newOutput(), newOutput()
	if code := ctl(context.Background(), out2, errOut2, "--talosconfig", readerCfg, "-e", metal.Addr, "-n", metal.Addr, "meta", "write", "0x0d", "x"); code != 1 ||
		!strings.Contains(errOut2.String(), "access to /machine.MachineService/MetaWrite denied: it needs one of [os:admin os:meta:writer], the caller has [os:reader]") {
		t.Fatalf("reader meta write: exit %d, %q", code, errOut2)
	}

}
