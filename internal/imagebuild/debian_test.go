package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseDepends(t *testing.T) {
	// apt-cache depends --no-recommends ... as Debian 12 prints it.
	out := `apache2-bin
  Depends: <perl:any>
    perl
  Depends: libapr1
 |Depends: libaprutil1-dbd-sqlite3
 |Depends: libaprutil1-dbd-mysql
  Depends: libaprutil1-dbd-pgsql
  Depends: <libaprutil1-dbd-freetds>
  Depends: libc6:any
  PreDepends: dpkg
  Suggests: www-browser
nginx
 |Depends: <nothing-provides-this>
  Depends: nginx-common
  Depends: zlib1g
busybox-static
`

	got := parseDepends([]byte(out))
	want := map[string][]string{
		// A virtual package with no provider is no dependency; an
		// alternative group gives its first real candidate.
		"apache2-bin":    {"perl", "libapr1", "libaprutil1-dbd-sqlite3", "libc6", "dpkg"},
		"nginx":          {"nginx-common", "zlib1g"},
		"busybox-static": nil,
	}

	for pkg, w := range want {
		if !slices.Equal(got[pkg], w) {
			t.Errorf("%s: got %q, want %q", pkg, got[pkg], w)
		}
	}

	if len(got) != len(want) {
		t.Errorf("got packages %v", got)
	}
}

func TestTreeEntriesKeepSetID(t *testing.T) {
	dir := t.TempDir()

	if err := os.MkdirAll(filepath.Join(dir, "usr", "share", "doc", "x"), 0o755); err != nil {
		t.Fatal(err)
	}

	must := func(err error) {
		t.Helper()

		if err != nil {
			t.Fatal(err)
		}
	}

	must(os.WriteFile(filepath.Join(dir, "usr", "share", "doc", "x", "README"), []byte("doc"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "nnp"), []byte("x"), 0o755))
	must(os.Chmod(filepath.Join(dir, "nnp"), 0o4755|os.ModeSetuid))
	must(os.Symlink("nnp", filepath.Join(dir, "link")))

	es, err := treeEntries(dir)
	if err != nil {
		t.Fatal(err)
	}

	byPath := map[string]entry{}
	for _, e := range es {
		byPath[e.path] = e
	}

	if e := byPath["/nnp"]; e.mode != 0o4755 {
		t.Errorf("/nnp mode %o, want 4755", e.mode)
	}

	if e := byPath["/link"]; e.link != "nnp" {
		t.Errorf("/link: %+v", e)
	}

	for p := range byPath {
		if strings.HasPrefix(p, "/usr/share/doc") {
			t.Errorf("documentation %s is in the image", p)
		}
	}
}

// TestDebRootFromDebianArchive fetches real packages from this machine's
// apt sources: the closure leaves maintainer-script tools out, the root
// is reused by key, and the busybox layer links every applet.
func TestDebRootFromDebianArchive(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Fatalf("apt-get: %v (make images needs Debian's apt)", err)
	}

	ctx := context.Background()

	var log bytes.Buffer

	b := &builder{opts: Options{Cache: t.TempDir(), Log: &log}}

	names, err := b.closure(ctx, []string{"nginx"})
	if err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{"nginx", "nginx-common", "libssl3", "libc6"} {
		if !slices.Contains(names, want) {
			t.Errorf("nginx's closure %v lacks %s", names, want)
		}
	}

	for _, not := range []string{"debconf", "perl-base"} {
		if slices.Contains(names, not) {
			t.Errorf("nginx's closure holds %s, which only maintainer scripts use", not)
		}
	}

	root, pkgs, err := b.debRoot(ctx, "busybox", []string{"busybox-static"})
	if err != nil {
		t.Fatal(err)
	}

	if len(pkgs) != 1 || pkgs[0].Name != "busybox-static" || pkgs[0].SHA256 == "" {
		t.Fatalf("packages %+v", pkgs)
	}

	out, err := exec.Command(filepath.Join(root, "bin", "busybox"), "echo", "unpacked").Output()
	if err != nil || string(out) != "unpacked\n" {
		t.Fatalf("busybox echo: %q, %v", out, err)
	}

	log.Reset()

	again, _, err := b.debRoot(ctx, "busybox", []string{"busybox-static"})
	if err != nil || again != root || !strings.Contains(log.String(), "up to date") {
		t.Fatalf("second debRoot: %s, %v; log %q", again, err, log.String())
	}

	// The busybox make images built, when the suite runs under make
	// (one build in CI, not two); a build of its own otherwise.
	bb := b
	if c := os.Getenv("TALOSBOX_IMAGE_CACHE"); c != "" {
		bb = &builder{opts: Options{Cache: c, Log: &log}}
	}

	if err := os.MkdirAll(filepath.Join(bb.opts.Cache, "build"), 0o755); err != nil {
		t.Fatal(err)
	}

	l, applets, err := bb.busyboxLayer(ctx)
	if err != nil {
		t.Fatal(err)
	}

	members := tarMembers(t, l.file)
	for _, want := range []string{"bin/sh", "bin/busybox", "etc/passwd", "bin/env", "bin/sysctl", "sbin/sysctl", "usr/bin/nc"} {
		if _, ok := members[want]; !ok {
			t.Errorf("busybox layer lacks %s", want)
		}
	}

	if !slices.Contains(applets, "/usr/bin/nc") || !slices.Contains(applets, "/bin/nc") {
		t.Errorf("applet links %v lack nc's", applets)
	}

	// Upstream's ash passes on variables whose names are not shell
	// names (Debian's drops them), and finds nc in $PATH, not in itself.
	bin, err := bb.busybox(ctx)
	if err != nil {
		t.Fatal(err)
	}

	pathDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(pathDir, "env")); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "sh", "-c", "env; nc")
	cmd.Env = []string{"data-1=value-1", "PATH=" + pathDir}
	out, _ = cmd.CombinedOutput()

	if !strings.Contains(string(out), "data-1=value-1") || !strings.Contains(string(out), "nc: not found") {
		t.Errorf("busybox sh: %s", out)
	}
}

func TestPreferPackages(t *testing.T) {
	es := []entry{
		{path: "/bin/ip", src: "ip"},
		{path: "/usr/bin/dig", src: "dig"},
		{path: "/bin/nc", link: "nc.openbsd"},
		{path: "/usr/share/ip", dir: true},
	}

	got := preferPackages([]string{"/sbin/ip", "/bin/ip", "/usr/bin/nc", "/bin/nc", "/bin/ls", "/usr/bin/dig"}, es)
	want := []entry{
		{path: "/sbin/ip", link: "/bin/ip", mode: 0o777},
		{path: "/usr/bin/nc", link: "/bin/nc", mode: 0o777},
	}

	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// tarMembers lists a gzipped layer's members by name, with their headers.
func tarMembers(t *testing.T, file string) map[string]*tar.Header {
	t.Helper()

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}

	out := map[string]*tar.Header{}

	tr := tar.NewReader(zr)

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}

		if err != nil {
			t.Fatal(err)
		}

		out[strings.TrimSuffix(h.Name, "/")] = h
	}
}
