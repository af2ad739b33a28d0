package initramfs

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/talosbox/talosbox/initramfs/initramfstest"
)

// fakeNode is a fake kernel tree and static binary in a fresh directory.
type fakeNode struct {
	dir     string
	binary  string
	modules string
}

func newFakeNode(t *testing.T) fakeNode {
	t.Helper()

	dir := t.TempDir()
	n := fakeNode{dir: dir, binary: filepath.Join(dir, "talosbox")}
	n.modules = initramfstest.Kernel(t, filepath.Join(dir, "kernel"), initramfstest.NodeModules)
	initramfstest.Executable(t, n.binary, false)

	return n
}

func (n fakeNode) options(c Compression) Options {
	return Options{Binary: n.binary, ModulesDir: n.modules, Compression: c}
}

func build(t *testing.T, o Options) ([]byte, *Result) {
	t.Helper()

	var buf bytes.Buffer

	res, err := Build(&buf, o)
	if err != nil {
		t.Fatal(err)
	}

	if res.Size != int64(buf.Len()) {
		t.Errorf("Result.Size %d, wrote %d", res.Size, buf.Len())
	}

	return buf.Bytes(), res
}

func decompress(t *testing.T, c Compression, b []byte) []byte {
	t.Helper()

	var (
		r   io.Reader
		err error
	)

	switch c {
	case None:
		return b
	case Gzip:
		r, err = gzip.NewReader(bytes.NewReader(b))
	case Zstd:
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(b))
		r = d
	}

	if err != nil {
		t.Fatal(err)
	}

	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}

	return out
}

// Same inputs give the same bytes, whatever the source files' times, and
// every compression holds exactly the uncompressed archive.
func TestBuildReproducible(t *testing.T) {
	n := newFakeNode(t)
	plain, _ := build(t, n.options(None))

	for _, c := range Compressions() {
		t.Run(string(c), func(t *testing.T) {
			first, res := build(t, n.options(c))

			// Touch every input: only contents may count.
			later := time.Now().Add(time.Hour)
			err := filepath.WalkDir(n.dir, func(p string, _ os.DirEntry, err error) error {
				if err != nil {
					return err
				}

				return os.Chtimes(p, later, later)
			})
			if err != nil {
				t.Fatal(err)
			}

			second, _ := build(t, n.options(c))
			if !bytes.Equal(first, second) {
				t.Fatalf("two builds differ (%d and %d bytes)", len(first), len(second))
			}

			if !bytes.Equal(decompress(t, c, first), plain) {
				t.Error("the decompressed archive is not the uncompressed one")
			}

			// Same-second builds would hide a clock in the gzip header.
			if c == Gzip {
				zr, err := gzip.NewReader(bytes.NewReader(first))
				if err != nil {
					t.Fatal(err)
				}

				if !zr.ModTime.IsZero() || zr.Name != "" {
					t.Errorf("gzip header: time %v name %q, want neither", zr.ModTime, zr.Name)
				}
			}

			if res.CPIOSize != int64(len(plain)) {
				t.Errorf("CPIOSize %d, want %d", res.CPIOSize, len(plain))
			}

			if c != None && res.Size >= res.CPIOSize {
				t.Errorf("%s: %d bytes from %d", c, res.Size, res.CPIOSize)
			}
		})
	}
}

func TestBuildLayout(t *testing.T) {
	n := newFakeNode(t)
	o := n.options(None)
	o.ModTime = 1700000000
	o.Version = "v1.2.3"

	b, res := build(t, o)
	members := readNewc(t, b)

	seen := map[string]member{}
	for _, m := range members {
		if dir := path.Dir(m.name); dir != "." && !seen[dir].mode.IsDir() {
			t.Errorf("%s comes before its directory %s", m.name, dir)
		}

		if m.uid != 0 || m.gid != 0 || m.mtime != o.ModTime {
			t.Errorf("%s: uid %d gid %d mtime %d, want 0 0 %d", m.name, m.uid, m.gid, m.mtime, o.ModTime)
		}

		seen[m.name] = m
	}

	if res.Entries != len(members) {
		t.Errorf("Result.Entries %d, archive has %d", res.Entries, len(members))
	}

	bin, err := os.ReadFile(n.binary)
	if err != nil {
		t.Fatal(err)
	}

	if m := seen["init"]; m.data != string(bin) || m.rawMode != modeRegular|0o755 {
		t.Errorf("init: mode %o, %d bytes; want the binary, mode 0755", m.rawMode, len(m.data))
	}

	if c := seen["dev/console"]; c.rawMode != modeCharDev|0o600 || c.major != 5 || c.minor != 1 {
		t.Errorf("dev/console: mode %o (%d, %d)", c.rawMode, c.major, c.minor)
	}

	if m := seen["tmp"]; m.rawMode != modeDir|0o1777 {
		t.Errorf("tmp: mode %o, want 41777", m.rawMode)
	}

	for _, d := range []string{"proc", "sys", "dev", "run", "system", "var", "etc", "sbin", "bin"} {
		if !seen[d].mode.IsDir() {
			t.Errorf("no directory %s", d)
		}
	}

	for _, l := range DefaultLinks() {
		if m := seen[l[1:]]; m.mode.Type() != os.ModeSymlink || m.data != "/init" {
			t.Errorf("%s: %v -> %q, want a link to /init", l, m.mode, m.data)
		}
	}

	if osr := seen["etc/os-release"].data; !strings.Contains(osr, "ID=talosbox\n") || !strings.Contains(osr, "VERSION_ID=v1.2.3\n") {
		t.Errorf("os-release:\n%s", osr)
	}

	if _, ok := seen["bin/sh"]; ok {
		t.Error("a shell without tools")
	}

	base := "lib/modules/" + initramfstest.Release + "/"
	if got := seen[base+"modules.builtin"].data; got != initramfstest.Builtin {
		t.Errorf("modules.builtin %q", got)
	}

	// Every default module and its dependencies, nothing else.
	var kos []string

	for name := range seen {
		if rel, ok := strings.CutPrefix(name, base); ok && strings.HasSuffix(rel, ".ko") {
			kos = append(kos, rel)
		}
	}

	want := slices.Collect(func(yield func(string) bool) {
		for rel := range initramfstest.NodeModules {
			if !strings.Contains(rel, "ext2") && !strings.Contains(rel, "e1000e") && !yield(rel) {
				return
			}
		}
	})

	slices.Sort(kos)
	slices.Sort(want)

	if !slices.Equal(kos, want) {
		t.Errorf("modules %v\nwant %v", kos, want)
	}

	if len(res.Modules) != len(want) || res.Release != initramfstest.Release {
		t.Errorf("Result: %d modules of %q, want %d of %q", len(res.Modules), res.Release, len(want), initramfstest.Release)
	}

	checkDepFile(t, seen[base+"modules.dep"].data, func(rel string) bool { _, ok := seen[base+rel]; return ok })
}

// checkDepFile checks modules.dep as internal/kmod reads it: relative
// paths of files that exist, no space after the colon (u-root misreads
// one), and wireguard with its eight dependencies.
func checkDepFile(t *testing.T, dep string, exists func(rel string) bool) {
	t.Helper()

	lines := strings.Split(strings.TrimSuffix(dep, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("modules.dep: %q", dep)
	}

	wireguard := false

	for _, l := range lines {
		mod, deps, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(deps, " ") || path.IsAbs(mod) || !exists(mod) {
			t.Errorf("modules.dep line %q", l)
		}

		for _, d := range strings.Fields(deps) {
			if !exists(d) {
				t.Errorf("modules.dep line %q: no %s", l, d)
			}
		}

		if strings.HasSuffix(mod, "/wireguard.ko") {
			wireguard = len(strings.Fields(deps)) == 8
		}
	}

	if !wireguard {
		t.Errorf("modules.dep has no wireguard line with 8 dependencies:\n%s", dep)
	}
}

func TestBuildRejects(t *testing.T) {
	n := newFakeNode(t)

	dynamic := filepath.Join(n.dir, "dynamic")
	initramfstest.Executable(t, dynamic, true)

	notELF := filepath.Join(n.dir, "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		modify func(*Options)
		want   string
		is     error
	}{
		{"no binary", func(o *Options) { o.Binary = "" }, "no binary", nil},
		{"missing binary", func(o *Options) { o.Binary = filepath.Join(n.dir, "nope") }, "no such file", nil},
		{"dynamic binary", func(o *Options) { o.Binary = dynamic }, "CGO_ENABLED=0", ErrNotStatic},
		{"not ELF", func(o *Options) { o.Binary = notELF }, "script", nil},
		{"unknown module", func(o *Options) { o.Modules = []string{"virtio_net", "no_such_mod"} }, `no module "no_such_mod"`, nil},
		{"modules without a tree", func(o *Options) { o.ModulesDir = "" }, "no modules directory", nil},
		{"relative link", func(o *Options) { o.Links = []string{"sbin/apid"} }, "absolute", nil},
		{"link over init", func(o *Options) { o.Links = []string{"/init"} }, "absolute path not yet", nil},
		{"dynamic tool", func(o *Options) { o.Tools = []string{dynamic} }, "tool", ErrNotStatic},
		{"compression", func(o *Options) { o.Compression = "lz4" }, `unknown compression "lz4"`, nil},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := n.options(None)
			tt.modify(&o)

			_, err := Build(io.Discard, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}

			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestBuildOptions(t *testing.T) {
	n := newFakeNode(t)

	tool := filepath.Join(n.dir, "tools", "gosh")
	initramfstest.Executable(t, tool, false)

	tests := []struct {
		name    string
		modify  func(*Options)
		present []string
		absent  []string
	}{
		{"no modules", func(o *Options) { o.Modules = []string{}; o.ModulesDir = "" },
			[]string{"init", "sbin/apid", "lib/modules"}, []string{"lib/modules/" + initramfstest.Release}},
		{"chosen modules and links", func(o *Options) { o.Modules = []string{"8021q"}; o.Links = []string{"/usr/bin/talosctl"} },
			[]string{"usr/bin/talosctl", "lib/modules/" + initramfstest.Release + "/kernel/net/llc/llc.ko"},
			[]string{"sbin/apid", "lib/modules/" + initramfstest.Release + "/kernel/fs/xfs/xfs.ko"}},
		{"tools", func(o *Options) { o.Tools = []string{tool} }, []string{"bin/gosh", "bin/sh"}, nil},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := n.options(None)
			tt.modify(&o)

			a, _, err := Assemble(o)
			if err != nil {
				t.Fatal(err)
			}

			for _, p := range tt.present {
				if !a.Has(p) {
					t.Errorf("no %s", p)
				}
			}

			for _, p := range tt.absent {
				if a.Has(p) {
					t.Errorf("%s is there", p)
				}
			}
		})
	}
}

func TestBuildFile(t *testing.T) {
	n := newFakeNode(t)
	p := filepath.Join(n.dir, "out", "sub", "initramfs.cpio.zst")

	res, err := BuildFile(p, n.options(Zstd))
	if err != nil {
		t.Fatal(err)
	}

	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}

	if st.Size() != res.Size || st.Mode().Perm() != 0o644 {
		t.Errorf("%s: %d bytes mode %v, result says %d", p, st.Size(), st.Mode(), res.Size)
	}

	// A build that fails on its inputs creates nothing; one that fails
	// while writing leaves neither the file nor a temporary one.
	o := n.options(None)
	o.Modules = []string{"no_such_mod"}

	if _, err := BuildFile(filepath.Join(n.dir, "new", "failed.cpio"), o); err == nil {
		t.Fatal("no error")
	}

	if _, err := os.Stat(filepath.Join(n.dir, "new")); !os.IsNotExist(err) {
		t.Errorf("a failed build made its directory (%v)", err)
	}

	o = n.options(None)
	o.Tools = []string{filepath.Join(n.dir, "gone")}
	initramfstest.Executable(t, o.Tools[0], false)

	a, res, err := Assemble(o)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(o.Tools[0]); err != nil { // vanishes before the write
		t.Fatal(err)
	}

	failed := filepath.Join(n.dir, "out", "failed.cpio")
	err = writeFileAtomic(failed, 0o644, func(f *os.File) error { return write(f, None, a, res) })

	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("error %v, want one naming the vanished file", err)
	}

	if ents, _ := os.ReadDir(filepath.Join(n.dir, "out")); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// The NFS and Ceph clients are carried, with their dependencies, in
// modules.dep and with their aliases, but modules.boot (what a node
// loads at boot) leaves them out: they wait for /sbin/modprobe. A kernel
// without them gets the boot modules alone; an explicit Demand the
// kernel lacks is an error.
func TestBuildDemandModules(t *testing.T) {
	dir := t.TempDir()

	mods := maps.Clone(initramfstest.NodeModules)
	maps.Copy(mods, initramfstest.DemandModules)

	bin := filepath.Join(dir, "talosbox")
	initramfstest.Executable(t, bin, false)

	o := Options{Binary: bin, ModulesDir: initramfstest.Kernel(t, filepath.Join(dir, "kernel"), mods)}

	b, res := build(t, o)

	seen := map[string]string{}
	for _, m := range readNewc(t, b) {
		seen[m.name] = m.data
	}

	base := "lib/modules/" + initramfstest.Release + "/"

	var wantDemand []string

	for rel := range initramfstest.DemandModules {
		if _, ok := seen[base+rel]; !ok {
			t.Errorf("%s is not carried", rel)
		}

		if !strings.Contains(seen[base+"modules.dep"], rel+":") {
			t.Errorf("modules.dep lacks %s", rel)
		}

		if rel != "kernel/lib/libcrc32c.ko" {
			wantDemand = append(wantDemand, rel)
		}
	}

	got := slices.Sorted(slices.Values(res.Demand))
	slices.Sort(wantDemand)

	if !slices.Equal(got, wantDemand) {
		t.Errorf("Result.Demand %v\nwant %v", got, wantDemand)
	}

	boot := strings.Fields(seen[base+"modules.boot"])
	if len(boot) != len(res.Modules) || !slices.Contains(boot, "virtio_pci") || !slices.Contains(boot, "libcrc32c") {
		t.Errorf("modules.boot %v, want the %d boot modules", boot, len(res.Modules))
	}

	for _, not := range []string{"nfs", "nfsv4", "sunrpc", "rbd", "ceph", "libceph"} {
		if slices.Contains(boot, not) {
			t.Errorf("modules.boot loads %s at boot", not)
		}
	}

	for _, want := range []string{"alias fs-nfs4 nfs\n", "alias fs-ceph ceph\n", "alias virtio:d00000004v* virtio_rng\n"} {
		if !strings.Contains(seen[base+"modules.alias"], want) {
			t.Errorf("modules.alias lacks %q:\n%s", want, seen[base+"modules.alias"])
		}
	}

	// The default tree has no NFS: the boot modules alone.
	n := newFakeNode(t)
	if _, res := build(t, n.options(None)); len(res.Demand) != 0 {
		t.Errorf("a kernel without NFS carries %v", res.Demand)
	}

	o = n.options(None)
	o.Demand = []string{"nfs"}

	if _, err := Build(io.Discard, o); err == nil || !strings.Contains(err.Error(), `no module "nfs"`) {
		t.Errorf("an explicit Demand the kernel lacks: %v", err)
	}
}
