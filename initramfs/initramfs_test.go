package initramfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// member is one entry read back from an archive.
type member struct {
	name         string
	mode         fs.FileMode
	rawMode      uint32
	nlink        uint32
	uid, gid     uint32
	mtime        uint32
	major, minor uint32
	data         string
}

// readNewc parses a newc archive strictly: magic, alignment, name
// terminator and the trailer.
func readNewc(t *testing.T, b []byte) []member {
	t.Helper()

	var out []member

	off := 0
	align := func() { off = (off + 3) &^ 3 }

	for {
		if off+newcHdrSize > len(b) {
			t.Fatalf("truncated header at %d", off)
		}

		h := string(b[off : off+newcHdrSize])
		if h[:6] != newcMagic {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}

		field := func(i int) uint32 {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatalf("field %d at %d: %v", i, off, err)
			}

			return uint32(v)
		}

		mode, nlink, size, major, minor, namesize := field(1), field(4), field(6), field(9), field(10), field(11)
		off += newcHdrSize

		name := string(b[off : off+int(namesize)])
		if !strings.HasSuffix(name, "\x00") {
			t.Fatalf("name %q is not NUL-terminated", name)
		}

		name = strings.TrimSuffix(name, "\x00")
		off += int(namesize)
		align()

		data := string(b[off : off+int(size)])
		off += int(size)
		align()

		if name == trailerName {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}

			return out
		}

		out = append(out, member{
			name: name, mode: fileMode(mode), rawMode: mode, nlink: nlink, uid: field(2), gid: field(3), mtime: field(5),
			major: major, minor: minor, data: data,
		})
	}
}

func TestArchiveLayout(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(src, []byte("ELF\x00binary"), 0o755); err != nil {
		t.Fatal(err)
	}

	a := New()
	if err := a.File("init", src, 0); err != nil {
		t.Fatal(err)
	}

	a.Bytes("/etc/deep/er/config.yaml", []byte("a: 1\n"), 0o600)
	a.Symlink("bin/networkd", "/init")
	a.Bytes("a-b", []byte("x"), 0o644) // sorts between "a" and "a/..." as a string
	a.Bytes("a/c", []byte("yz"), 0o644)

	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}

	members := readNewc(t, buf.Bytes())

	seen := map[string]member{}
	for _, m := range members {
		if dir := path.Dir(m.name); dir != "." {
			if d, ok := seen[dir]; !ok || !d.mode.IsDir() {
				t.Errorf("%s comes before its directory %s", m.name, dir)
			}
		}

		if _, dup := seen[m.name]; dup {
			t.Errorf("%s twice", m.name)
		}

		seen[m.name] = m
	}

	want := map[string]string{
		"init":                    fmt.Sprint(fs.FileMode(0o755)) + " ELF\x00binary",
		"etc":                     fmt.Sprint(fs.ModeDir|0o755) + " ",
		"etc/deep/er":             fmt.Sprint(fs.ModeDir|0o755) + " ",
		"etc/deep/er/config.yaml": fmt.Sprint(fs.FileMode(0o600)) + " a: 1\n",
		"bin/networkd":            fmt.Sprint(fs.ModeSymlink|0o777) + " /init",
		"a/c":                     fmt.Sprint(fs.FileMode(0o644)) + " yz",
		"dev/console":             fmt.Sprint(fs.ModeDevice|fs.ModeCharDevice|0o600) + " ",
		"proc":                    fmt.Sprint(fs.ModeDir|0o755) + " ",
	}

	for name, w := range want {
		m, ok := seen[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}

		if got := fmt.Sprint(m.mode) + " " + m.data; got != w {
			t.Errorf("%s: %q, want %q", name, got, w)
		}
	}

	if c := seen["dev/console"]; c.major != 5 || c.minor != 1 {
		t.Errorf("dev/console is (%d, %d), want (5, 1)", c.major, c.minor)
	}

	if d := seen["etc"]; d.nlink != 2 {
		t.Errorf("directory nlink %d, want 2", d.nlink)
	}
}

func TestWriterRejects(t *testing.T) {
	w := NewWriter(io.Discard)

	for _, r := range []Record{
		{Name: "/abs", Mode: modeRegular},
		{Name: "", Mode: modeRegular},
		{Name: "nodata", Mode: modeRegular, Size: 3},
	} {
		if err := w.WriteRecord(r); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
}

func TestCleanPaths(t *testing.T) {
	for in, want := range map[string]string{"/a/b": "a/b", "a/../b": "b", "../../etc": "etc", "a//b/": "a/b"} {
		if got, err := clean(in); err != nil || got != want {
			t.Errorf("clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}

	for _, bad := range []string{"", "/", "..", "a\x00b"} {
		if _, err := clean(bad); err == nil {
			t.Errorf("clean(%q): no error", bad)
		}
	}
}
