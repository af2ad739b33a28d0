package kmod

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
)

// fakeLoader records loads instead of calling into the kernel, which
// this host's kernel (no modules tree, shared with other work) cannot
// take; real loading is exercised in the QEMU boot tests.
type fakeLoader struct {
	calls []call
	// fail gives the error returned for a module, by canonical name.
	fail map[string]error
}

type call struct{ path, params string }

func (f *fakeLoader) load(path, params string) error {
	f.calls = append(f.calls, call{path: path, params: params})
	return f.fail[moduleName(path)]
}

// depmod's output for a few Debian cloud-kernel modules: closures listed
// in full, the deepest dependency last.
const depmodFile = `kernel/fs/xfs/xfs.ko: kernel/lib/libcrc32c.ko
kernel/lib/libcrc32c.ko:
kernel/drivers/net/wireguard/wireguard.ko: kernel/net/ipv4/udp_tunnel.ko kernel/net/ipv6/ip6_udp_tunnel.ko kernel/lib/crypto/libchacha20poly1305.ko kernel/lib/crypto/libchacha.ko kernel/lib/crypto/libpoly1305.ko kernel/lib/crypto/libcurve25519-generic.ko
kernel/net/ipv4/udp_tunnel.ko:
kernel/net/ipv6/ip6_udp_tunnel.ko:
kernel/lib/crypto/libchacha20poly1305.ko: kernel/lib/crypto/libchacha.ko kernel/lib/crypto/libpoly1305.ko
kernel/lib/crypto/libchacha.ko:
kernel/lib/crypto/libpoly1305.ko:
kernel/lib/crypto/libcurve25519-generic.ko:
kernel/drivers/net/bonding/bonding.ko: kernel/net/tls/tls.ko
kernel/net/tls/tls.ko:
kernel/drivers/nvme/host/nvme-tcp.ko.xz: kernel/drivers/nvme/host/nvme-fabrics.ko.xz kernel/drivers/nvme/host/nvme-core.ko.xz
kernel/drivers/nvme/host/nvme-fabrics.ko.xz: kernel/drivers/nvme/host/nvme-core.ko.xz
kernel/drivers/nvme/host/nvme-core.ko.xz:
`

// withSpace is the same kind of file as written by hand or by generators
// that put a space after every colon and may separate with several blanks.
const withSpace = "kernel/fs/xfs/xfs.ko:  kernel/lib/libcrc32c.ko \n" +
	"kernel/lib/libcrc32c.ko: \n" +
	"\n" +
	"kernel/drivers/net/bonding/bonding.ko:\tkernel/net/tls/tls.ko\n" +
	"kernel/net/tls/tls.ko: "

func TestParseDeps(t *testing.T) {
	want := map[string][]string{
		"kernel/fs/xfs/xfs.ko":                  {"kernel/lib/libcrc32c.ko"},
		"kernel/lib/libcrc32c.ko":               {},
		"kernel/drivers/net/bonding/bonding.ko": {"kernel/net/tls/tls.ko"},
		"kernel/net/tls/tls.ko":                 {},
	}

	for _, tc := range []struct{ name, file string }{
		{"depmod", "kernel/fs/xfs/xfs.ko: kernel/lib/libcrc32c.ko\nkernel/lib/libcrc32c.ko:\nkernel/drivers/net/bonding/bonding.ko: kernel/net/tls/tls.ko\nkernel/net/tls/tls.ko:\n"},
		{"space after colon", withSpace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDeps(strings.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}

			if len(got) != len(want) {
				t.Fatalf("parsed %d modules, want %d: %q", len(got), len(want), got)
			}

			for mod, deps := range want {
				// An empty string here is the dependency u-root invents
				// for "x.ko: ": it must never appear.
				if g := got[mod]; len(g) != len(deps) || (len(deps) > 0 && !reflect.DeepEqual(g, deps)) {
					t.Errorf("deps of %s = %q, want %q", mod, g, deps)
				}
			}
		})
	}
}

func TestParseDepsRejectsGarbage(t *testing.T) {
	for _, file := range []string{"kernel/fs/xfs/xfs.ko kernel/lib/libcrc32c.ko\n", ": kernel/lib/libcrc32c.ko\n"} {
		if _, err := parseDeps(strings.NewReader(file)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("parseDeps(%q) error = %v, want one naming line 1", file, err)
		}
	}
}

func TestOrder(t *testing.T) {
	deps, err := parseDeps(strings.NewReader(depmodFile))
	if err != nil {
		t.Fatal(err)
	}

	idx := newIndex("/m", deps, nil)

	for _, tc := range []struct {
		module string
		want   []string
	}{
		{"xfs", []string{"libcrc32c", "xfs"}},
		{"libcrc32c", []string{"libcrc32c"}},
		{"wireguard", []string{"libcurve25519_generic", "libpoly1305", "libchacha", "libchacha20poly1305", "ip6_udp_tunnel", "udp_tunnel", "wireguard"}},
		{"nvme_tcp", []string{"nvme_core", "nvme_fabrics", "nvme_tcp"}},
	} {
		got, err := idx.order(idx.byName[tc.module])
		if err != nil {
			t.Errorf("order(%s): %v", tc.module, err)
			continue
		}

		names := make([]string, len(got))
		for i, p := range got {
			names[i] = moduleName(p)
		}

		if !reflect.DeepEqual(names, tc.want) {
			t.Errorf("order(%s) = %v, want %v", tc.module, names, tc.want)
		}
	}
}

// A file listing only direct dependencies, in an order that is wrong for
// a plain back-to-front walk, still gives every module after its needs.
func TestOrderDirectDependenciesOnly(t *testing.T) {
	deps := map[string][]string{
		"a.ko": {"b.ko", "c.ko"},
		"b.ko": {"c.ko", "d.ko"},
		"c.ko": {"d.ko"},
		"d.ko": {},
	}

	got, err := newIndex("/m", deps, nil).order("a.ko")
	if err != nil {
		t.Fatal(err)
	}

	if want := []string{"d.ko", "c.ko", "b.ko", "a.ko"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestOrderCycle(t *testing.T) {
	deps := map[string][]string{"a.ko": {"b.ko"}, "b.ko": {"c.ko"}, "c.ko": {"a.ko"}}

	_, err := newIndex("/m", deps, nil).order("a.ko")
	if err == nil || !strings.Contains(err.Error(), "dependency cycle: a -> b -> c -> a") {
		t.Errorf("error = %v, want the cycle spelled out", err)
	}
}

func TestFormatParams(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
		err  string
	}{
		{in: nil, want: ""},
		{in: []string{"max_loop=64"}, want: "max_loop=64"},
		{in: []string{"miimon=100", " mode=802.3ad ", "use_carrier"}, want: "miimon=100 mode=802.3ad use_carrier"},
		{in: []string{"name=a b"}, want: `name="a b"`},
		{in: []string{`name="a b"`}, want: `name="a b"`},
		{in: []string{"empty="}, want: "empty="},
		{in: []string{""}, err: "empty parameter"},
		{in: []string{"=1"}, err: "invalid name"},
		{in: []string{`na"me=1`}, err: "invalid name"},
		{in: []string{`x=a"b`}, err: "double quote"},
		{in: []string{`x="a"b"`}, err: "double quote"},
		{in: []string{"x=a\nb"}, err: "newline"},
	} {
		got, err := formatParams(tc.in)

		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("formatParams(%q) error = %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("formatParams(%q): %v", tc.in, err)
		case got != tc.want:
			t.Errorf("formatParams(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func modulesDir(t *testing.T, dep, builtin string) string {
	t.Helper()

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644); err != nil {
		t.Fatal(err)
	}

	if builtin != "" {
		if err := os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte(builtin), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	return dir
}

func TestLoad(t *testing.T) {
	dir := modulesDir(t, depmodFile, "kernel/fs/ext4/ext4.ko\nkernel/net/packet/af_packet.ko\n")
	abs := func(p string) string { return filepath.Join(dir, p) }

	for _, tc := range []struct {
		name    string
		modules []configs.KernelModule
		fail    map[string]error
		want    []call
		errs    []string
	}{
		{
			name:    "dependencies first, parameters to the named module only",
			modules: []configs.KernelModule{{Name: "xfs", Parameters: []string{"a=1", "b=x y"}}},
			want:    []call{{abs("kernel/lib/libcrc32c.ko"), ""}, {abs("kernel/fs/xfs/xfs.ko"), `a=1 b="x y"`}},
		},
		{
			name:    "shared dependencies load once",
			modules: []configs.KernelModule{{Name: "nvme-fabrics"}, {Name: "nvme_tcp"}},
			want: []call{
				{abs("kernel/drivers/nvme/host/nvme-core.ko.xz"), ""},
				{abs("kernel/drivers/nvme/host/nvme-fabrics.ko.xz"), ""},
				{abs("kernel/drivers/nvme/host/nvme-tcp.ko.xz"), ""},
			},
		},
		{
			name:    "a dependency gets the parameters of its own later entry",
			modules: []configs.KernelModule{{Name: "xfs"}, {Name: "libcrc32c", Parameters: []string{"p=1"}}},
			want:    []call{{abs("kernel/lib/libcrc32c.ko"), "p=1"}, {abs("kernel/fs/xfs/xfs.ko"), ""}},
		},
		{
			name:    "repeated entries merge their parameters",
			modules: []configs.KernelModule{{Name: "tls", Parameters: []string{"a=1"}}, {Name: "tls", Parameters: []string{"b=2"}}},
			want:    []call{{abs("kernel/net/tls/tls.ko"), "a=1 b=2"}},
		},
		{
			name:    "already loaded is success",
			modules: []configs.KernelModule{{Name: "bonding"}},
			fail:    map[string]error{"tls": os.NewSyscallError("finit_module", unix.EEXIST), "bonding": unix.EEXIST},
			want:    []call{{abs("kernel/net/tls/tls.ko"), ""}, {abs("kernel/drivers/net/bonding/bonding.ko"), ""}},
		},
		{
			name:    "built-in modules need no loading",
			modules: []configs.KernelModule{{Name: "ext4"}, {Name: "af_packet"}},
		},
		{
			name:    "missing module is named, the others still load",
			modules: []configs.KernelModule{{Name: "drbd"}, {Name: "tls"}},
			want:    []call{{abs("kernel/net/tls/tls.ko"), ""}},
			errs:    []string{"load kernel module drbd: not found in " + filepath.Join(dir, "modules.dep") + " (and not built into the kernel)"},
		},
		{
			name:    "a failed dependency fails every module needing it, tried once",
			modules: []configs.KernelModule{{Name: "libchacha20poly1305"}, {Name: "wireguard"}, {Name: "xfs"}},
			fail:    map[string]error{"libpoly1305": unix.EPERM},
			want: []call{
				{abs("kernel/lib/crypto/libpoly1305.ko"), ""},
				{abs("kernel/lib/crypto/libcurve25519-generic.ko"), ""},
				{abs("kernel/lib/libcrc32c.ko"), ""},
				{abs("kernel/fs/xfs/xfs.ko"), ""},
			},
			errs: []string{
				"load kernel module libchacha20poly1305: dependency libpoly1305: operation not permitted",
				"load kernel module wireguard: dependency libpoly1305: operation not permitted",
			},
		},
		{
			name:    "the module's own failure",
			modules: []configs.KernelModule{{Name: "libcrc32c"}},
			fail:    map[string]error{"libcrc32c": unix.ENOEXEC},
			want:    []call{{abs("kernel/lib/libcrc32c.ko"), ""}},
			errs:    []string{"load kernel module libcrc32c: exec format error"},
		},
		{
			name:    "bad entries are reported with their index",
			modules: []configs.KernelModule{{Name: ""}, {Name: "../evil"}, {Name: "tls", Parameters: []string{`x=a"b`}}, {Name: "libcrc32c"}},
			want:    []call{{abs("kernel/lib/libcrc32c.ko"), ""}},
			errs: []string{
				`machine.kernel.modules[0]: invalid module name ""`,
				`machine.kernel.modules[1]: invalid module name "../evil"`,
				`machine.kernel.modules[2] (tls): parameter "x=a\"b": the kernel cannot take a double quote inside a value`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &fakeLoader{fail: tc.fail}
			err := load(tc.modules, dir, fl)

			if !reflect.DeepEqual(fl.calls, tc.want) {
				t.Errorf("loads:\n got %q\nwant %q", fl.calls, tc.want)
			}

			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}

			if !reflect.DeepEqual(got, tc.errs) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.errs)
			}
		})
	}
}

func TestLoadSpaceAfterColon(t *testing.T) {
	dir := modulesDir(t, withSpace, "")
	fl := &fakeLoader{}

	if err := load([]configs.KernelModule{{Name: "xfs"}, {Name: "bonding"}}, dir, fl); err != nil {
		t.Fatal(err)
	}

	want := []call{
		{filepath.Join(dir, "kernel/lib/libcrc32c.ko"), ""},
		{filepath.Join(dir, "kernel/fs/xfs/xfs.ko"), ""},
		{filepath.Join(dir, "kernel/net/tls/tls.ko"), ""},
		{filepath.Join(dir, "kernel/drivers/net/bonding/bonding.ko"), ""},
	}
	if !reflect.DeepEqual(fl.calls, want) {
		t.Errorf("loads:\n got %q\nwant %q", fl.calls, want)
	}
}

func TestLoadWithoutModulesDep(t *testing.T) {
	dir := t.TempDir()
	fl := &fakeLoader{}

	err := load([]configs.KernelModule{{Name: "xfs"}}, dir, fl)
	if err == nil || !strings.Contains(err.Error(), "read module dependencies") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error = %v, want a missing modules.dep", err)
	}

	if len(fl.calls) != 0 {
		t.Errorf("loaded %q without an index", fl.calls)
	}

	// Nothing to load needs no index at all.
	if err := Load(nil, Options{ModulesDir: dir}); err != nil {
		t.Errorf("Load(nil): %v", err)
	}
}

// The real loader's checks before the system call; the call itself
// cannot be made against this host's kernel.
func TestKernelLoaderRefusesBeforeTheSyscall(t *testing.T) {
	dir := t.TempDir()
	notModule := filepath.Join(dir, "readme.txt")

	if err := os.WriteFile(notModule, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}

	gz := filepath.Join(dir, "broken.ko.gz")
	if err := os.WriteFile(gz, []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ path, err string }{
		{filepath.Join(dir, "absent.ko"), "no such file"},
		{notModule, "not a kernel module file"},
		{gz, "decompress " + gz},
	} {
		if err := (kernelLoader{}).load(tc.path, ""); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("load(%s) error = %v, want %q", tc.path, err, tc.err)
		}
	}
}

func TestDefaultModulesDir(t *testing.T) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}

	dir, err := DefaultModulesDir()
	if err != nil {
		t.Fatal(err)
	}

	if filepath.Base(dir) != unix.ByteSliceToString(u.Release[:]) || !strings.HasSuffix(filepath.Dir(dir), "/lib/modules") {
		t.Errorf("DefaultModulesDir() = %q, want /lib/modules/<release>", dir)
	}
}
