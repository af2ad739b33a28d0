package initramfs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/applets/initramfs"
	"github.com/talosbox/talosbox/initramfs/initramfstest"
	"github.com/talosbox/talosbox/internal/applet"
)

// fixture is a fake kernel package and static binary.
type fixture struct {
	dir, kernel, binary, dynamic string
}

func newFixture(t *testing.T) fixture {
	t.Helper()

	dir := t.TempDir()
	f := fixture{dir: dir, kernel: filepath.Join(dir, "kernel"), binary: filepath.Join(dir, "talosbox"), dynamic: filepath.Join(dir, "dynamic")}
	initramfstest.Kernel(t, f.kernel, initramfstest.NodeModules)
	initramfstest.Executable(t, f.binary, false)
	initramfstest.Executable(t, f.dynamic, true)

	return f
}

// run runs the applet in-process with env vars vars. Without --runc in
// args, the container runtime is left out (the fixtures have no make
// images output beside them).
func run(vars map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer

	if !slices.Contains(args, "--runc") && !slices.Contains(args, "--write-modules-dep") {
		args = append([]string{"--no-runtime"}, args...)
	}

	env := applet.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
	code = initramfs.Main(context.Background(), args, env)

	return code, out.String(), errb.String()
}

func TestBuild(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "node.cpio")

	code, stdout, stderr := run(nil, "-o", out, "--binary", f.binary, "--kernel-dir", f.kernel)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}

	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}

	// 98 module files: the defaults and their dependencies.
	for _, want := range []string{out + ": ", "(" + strconv.FormatInt(st.Size(), 10) + " bytes, none;", "98 modules (kernel " + initramfstest.Release + ")", " entries"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary %q lacks %q", stdout, want)
		}
	}

	// The same inputs and SOURCE_DATE_EPOCH give the same bytes; another
	// epoch changes them.
	first, _ := os.ReadFile(out)

	for _, tt := range []struct {
		epoch string
		same  bool
	}{{"", true}, {"0", true}, {"1700000000", false}} {
		again := filepath.Join(f.dir, "again.cpio")
		if code, _, stderr := run(map[string]string{"SOURCE_DATE_EPOCH": tt.epoch}, "--output", again, "--binary", f.binary, "--kernel-dir", f.kernel); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}

		b, _ := os.ReadFile(again)
		if bytes.Equal(first, b) != tt.same {
			t.Errorf("SOURCE_DATE_EPOCH=%q: identical %t, want %t", tt.epoch, !tt.same, tt.same)
		}
	}
}

// Without -o the file goes to _out/ with the compression's suffix, and
// the kernel comes from $TALOSBOX_KERNEL_DIR.
func TestDefaults(t *testing.T) {
	f := newFixture(t)
	t.Chdir(f.dir)

	for _, tt := range []struct{ compress, file string }{
		{"none", "_out/initramfs.cpio"}, {"gzip", "_out/initramfs.cpio.gz"}, {"zstd", "_out/initramfs.cpio.zst"},
	} {
		code, stdout, stderr := run(map[string]string{initramfs.KernelDirEnv: f.kernel}, "--binary", f.binary, "--compress", tt.compress, "--modules", "xfs, 8021q")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tt.compress, code, stderr)
		}

		if _, err := os.Stat(tt.file); err != nil || !strings.HasPrefix(stdout, tt.file+": ") {
			t.Errorf("%s: %v; summary %q", tt.compress, err, stdout)
		}

		// xfs needs libcrc32c; 8021q needs garp, stp, llc and mrp.
		if !strings.Contains(stdout, " 7 modules") {
			t.Errorf("%s: summary %q, want 7 modules", tt.compress, stdout)
		}
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t)

	second := filepath.Join(f.dir, "two")
	initramfstest.Kernel(t, second, map[string][]string{"kernel/fs/xfs/xfs.ko": nil})

	if err := os.MkdirAll(filepath.Join(second, "lib/modules/6.0.0-1-amd64/kernel"), 0o755); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(f.dir, "out.cpio")
	missing := filepath.Join(f.dir, "nokernel")

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no kernel", []string{"--kernel-dir", missing}, 1, "run scripts/fetch-kernel.sh " + missing},
		{"several kernels", []string{"--kernel-dir", second}, 1, "choose one with --kernel-version"},
		{"unknown kernel version", []string{"--kernel-dir", f.kernel, "--kernel-version", "9.9"}, 1, "no unpacked kernel 9.9"},
		{"unknown module", []string{"--kernel-dir", f.kernel, "--modules", "xfs,frobnicator"}, 1, `no module "frobnicator"`},
		{"dynamic binary", []string{"--kernel-dir", f.kernel, "--binary", f.dynamic}, 1, "dynamically linked"},
		{"bad compression", []string{"--compress", "bzip2"}, 2, `unknown compression "bzip2"`},
		{"argument", []string{"extra"}, 2, `unexpected argument "extra"`},
		{"bad flag", []string{"--frob"}, 2, "flag provided but not defined"},
		{"bad dep dir", []string{"--write-modules-dep", missing}, 1, missing},
		{"no extension there", []string{"--kernel-dir", f.kernel, "--extension", missing}, 1, "--extension: extension " + missing + ": open " + missing + "/manifest.yaml"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-o", out, "--binary", f.binary}, tt.args...)

			code, _, stderr := run(nil, args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}

	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed build left %s (%v)", out, err)
	}

	if code, _, stderr := run(map[string]string{"SOURCE_DATE_EPOCH": "yesterday"}, "-o", out, "--binary", f.binary, "--modules="); code != 1 || !strings.Contains(stderr, "SOURCE_DATE_EPOCH") {
		t.Errorf("SOURCE_DATE_EPOCH=yesterday: exit %d, %q", code, stderr)
	}
}

// Without modules no kernel is needed.
func TestNoModules(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "bare.cpio")

	code, stdout, stderr := run(map[string]string{initramfs.KernelDirEnv: filepath.Join(f.dir, "absent")}, "-o", out, "--binary", f.binary, "--modules=")
	if code != 0 || !strings.Contains(stdout, "0 modules (no kernel modules)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestWriteModulesDep(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.kernel, "lib/modules", initramfstest.Release)

	code, stdout, stderr := run(nil, "--write-modules-dep", dir)
	if code != 0 || stdout != filepath.Join(dir, "modules.dep")+": 100 modules\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	dep, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(dep), "\nkernel/fs/xfs/xfs.ko:kernel/lib/libcrc32c.ko\n") {
		t.Errorf("modules.dep:\n%s", dep)
	}
}

func TestHelp(t *testing.T) {
	code, _, stderr := run(nil, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}

	for _, want := range []string{"Usage: talosbox initramfs", "-kernel-dir", "-with-tools", "SOURCE_DATE_EPOCH", "virtio_pci,virtio_net"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help lacks %q:\n%s", want, stderr)
		}
	}
}

// TestRuntime: runc, the CNI plugins and the runtime root go in at Talos's paths, from the
// flags or from make images' output beside the binary; missing, they are
// an error that says how to get them.
func TestRuntime(t *testing.T) {
	f := newFixture(t)
	cni := filepath.Join(f.dir, "cni")

	if err := os.MkdirAll(cni, 0o755); err != nil {
		t.Fatal(err)
	}

	bin, _ := os.ReadFile(f.binary)
	if err := os.WriteFile(filepath.Join(cni, "bridge"), bin, 0o755); err != nil {
		t.Fatal(err)
	}

	root := filepath.Join(f.dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "usr", "sbin"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.Symlink("xtables-nft-multi", filepath.Join(root, "usr", "sbin", "iptables")); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(f.dir, "rt.cpio")

	code, _, stderr := run(nil, "-o", out, "--binary", f.binary, "--kernel-dir", f.kernel, "--runc", f.binary, "--cni-bin", cni)
	if code != 1 || !strings.Contains(stderr, "--runtime-root") {
		t.Fatalf("without a runtime root: exit %d, stderr %q", code, stderr)
	}

	code, _, stderr = run(nil, "-o", out, "--binary", f.binary, "--kernel-dir", f.kernel, "--runc", f.binary, "--cni-bin", cni, "--runtime-root", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}

	data, _ := os.ReadFile(out)
	for _, name := range []string{"bin/runc\x00", "opt/cni/bin/bridge\x00", "bin/containerd-shim-runc-v2\x00", "usr/sbin/iptables\x00"} {
		if !bytes.Contains(data, []byte(name)) {
			t.Errorf("the archive lacks %q", strings.TrimSuffix(name, "\x00"))
		}
	}

	code, _, stderr = run(nil, "-o", out, "--binary", f.binary, "--kernel-dir", f.kernel, "--runc", "")
	if code != 1 || !strings.Contains(stderr, "run make images") {
		t.Fatalf("without a runtime: exit %d, stderr %q", code, stderr)
	}
}

// --demand-modules names modules carried but not loaded at boot; one the
// kernel lacks is an error (the default list leaves those out instead).
func TestDemandModulesFlag(t *testing.T) {
	f := newFixture(t)

	code, _, stderr := run(nil, "-o", filepath.Join(f.dir, "node.cpio"), "--binary", f.binary, "--kernel-dir", f.kernel, "--demand-modules", "ext2, nfs")
	if code == 0 || !strings.Contains(stderr, `no module "nfs"`) {
		t.Errorf("exit %d, stderr %q; want the missing module named", code, stderr)
	}

	code, stdout, stderr := run(nil, "-o", filepath.Join(f.dir, "node.cpio"), "--binary", f.binary, "--kernel-dir", f.kernel, "--demand-modules", "ext2")
	if code != 0 || !strings.Contains(stdout, "98 modules and 1 on demand (kernel ") {
		t.Errorf("exit %d, %q, stderr %q; want ext2 on demand", code, stdout, stderr)
	}
}
