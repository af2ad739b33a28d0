package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/talosbox/talosbox/internal/images"
)

func TestTarIsDeterministicWithParents(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bin")

	if err := os.WriteFile(f, []byte("program"), 0o755); err != nil {
		t.Fatal(err)
	}

	entries := []entry{
		{path: "/usr/local/bin/kubelet", link: "kubernetes", mode: 0o777},
		{path: "/usr/local/bin/kubernetes", src: f, mode: 0o755},
	}

	var a, b bytes.Buffer
	if err := writeTar(&a, entries); err != nil {
		t.Fatal(err)
	}

	// Touching the source changes its mtime, not the layer.
	if err := os.Chtimes(f, epoch.AddDate(5, 0, 0), epoch.AddDate(5, 0, 0)); err != nil {
		t.Fatal(err)
	}

	slices.Reverse(entries)

	if err := writeTar(&b, entries); err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same entries in another order or with another mtime gave another tar")
	}

	var names []string

	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}

		if err != nil {
			t.Fatal(err)
		}

		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v uid %d gid %d", h.Name, h.ModTime, h.Uid, h.Gid)
		}

		names = append(names, h.Name)
	}

	want := []string{"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/kubelet", "usr/local/bin/kubernetes"}
	if !slices.Equal(names, want) {
		t.Errorf("members %v, want %v", names, want)
	}

	if err := writeTar(io.Discard, []entry{{path: "relative", src: f}}); err == nil {
		t.Error("a relative path was accepted")
	}

	if err := writeTar(io.Discard, []entry{{path: "/x", src: f}, {path: "/x", link: "y"}}); err == nil {
		t.Error("two different entries at one path were accepted")
	}
}

func TestHostFilesCarryTheirLibraries(t *testing.T) {
	h := newHostFiles("")
	if err := netfilterFiles(h); err != nil {
		t.Fatal(err)
	}

	got := map[string]entry{}
	for _, e := range h.entries() {
		got[e.path] = e
	}

	for _, p := range []string{
		"/usr/sbin/xtables-nft-multi", "/usr/sbin/nft",
		"/lib64/ld-linux-x86-64.so.2",                        // the loader, at PT_INTERP's path
		"/lib/x86_64-linux-gnu/libc.so.6",                    // everyone's
		"/lib/x86_64-linux-gnu/libnftables.so.1",             // nft's
		"/lib/x86_64-linux-gnu/libxtables.so.12",             // iptables'
		"/usr/lib/x86_64-linux-gnu/xtables/libxt_comment.so", // an extension iptables dlopens
	} {
		if _, ok := got[p]; !ok {
			t.Errorf("%s is missing from the netfilter layer", p)
		}
	}

	// nft names protocols through /etc/protocols; kube-proxy compares
	// the names. Ours must agree with Debian's netbase, where it has one.
	e, ok := got["/etc/protocols"]
	if !ok {
		t.Fatal("/etc/protocols is missing from the netfilter layer")
	}

	host := protocolNumbers(t, readFile(t, "/etc/protocols"))
	ours := protocolNumbers(t, e.data)

	for _, name := range []string{"tcp", "udp", "sctp"} {
		if ours[name] == "" || ours[name] != host[name] {
			t.Errorf("%s: ours %q, Debian's %q", name, ours[name], host[name])
		}
	}

	for name, n := range ours {
		if hn, ok := host[name]; ok && hn != n {
			t.Errorf("%s: ours %s, Debian's %s", name, n, hn)
		}
	}

	if e := got["/usr/sbin/iptables-restore"]; e.link != "xtables-nft-multi" {
		t.Errorf("iptables-restore: %+v", e)
	}

	// libc names the loader too: it is stored once, linked the second time.
	if e := got["/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"]; e.link != "/lib64/ld-linux-x86-64.so.2" {
		t.Errorf("second loader path: %+v", e)
	}

	if err := newHostFiles(t.TempDir()).program("/usr/sbin/nft"); err == nil || !strings.Contains(err.Error(), "Debian package") {
		t.Errorf("a missing program: %v", err)
	}
}

func TestKubeModuleCopiesPinsAndReplacesStaging(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "v1.34.12.mod")

	err := os.WriteFile(up, []byte(`module k8s.io/kubernetes

go 1.24.0

godebug default=go1.23

require (
	github.com/spf13/cobra v1.9.1
	k8s.io/api v0.0.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect

replace k8s.io/api => ./staging/src/k8s.io/api
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}

	src, _ := filepath.Abs(filepath.Join("..", ".."))
	b := &builder{opts: Options{Out: dir, Cache: dir, Src: src}}

	mod, err := b.kubeModule("v1.34.12", moduleInfo{GoMod: up})
	if err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}

	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}

	reqs := map[string]string{}
	for _, r := range f.Require {
		reqs[r.Mod.Path] = r.Mod.Version
	}

	for p, v := range map[string]string{"k8s.io/kubernetes": "v1.34.12", "github.com/spf13/cobra": "v1.9.1", "github.com/inconshreveable/mousetrap": "v1.1.0", "k8s.io/api": "v0.0.0"} {
		if reqs[p] != v {
			t.Errorf("require %s %q, want %q", p, reqs[p], v)
		}
	}

	if len(f.Replace) != 1 || f.Replace[0].New.Path != "k8s.io/api" || f.Replace[0].New.Version != "v0.34.12" {
		t.Errorf("replace: %+v", f.Replace)
	}

	if f.Go.Version != "1.24.0" || len(f.Godebug) != 1 {
		t.Errorf("go %v godebug %v", f.Go, f.Godebug)
	}

	// Every Go file of images/kubernetes, this minor's compat file as
	// compat.go and no other minor's.
	for _, name := range []string{"main.go", "schema.go", "schema_scheduler.go", "validate.go", "compat.go"} {
		src, _ := os.ReadFile(filepath.Join(mod, name))
		if bytes.Contains(src, []byte("go:build ignore")) || !bytes.Contains(src, []byte("package main")) {
			t.Errorf("%s was not copied without its build tag", name)
		}
	}

	if compat, _ := os.ReadFile(filepath.Join(mod, "compat.go")); !bytes.Contains(compat, []byte("kubelet.NewKubeletCommand(context.Background())")) {
		t.Error("compat.go is not compat_1.34.go")
	}

	if _, err := os.Stat(filepath.Join(mod, "compat_1.33.go")); !os.IsNotExist(err) {
		t.Errorf("another minor's compat file was copied: %v", err)
	}

	// Each minor the catalog builds has its compat file; one without is
	// refused by name.
	for _, v := range images.KubernetesVersions() {
		if _, err := b.kubeModule("v"+v, moduleInfo{GoMod: up}); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}

	if _, err := b.kubeModule("v1.99.0", moduleInfo{GoMod: up}); err == nil || !strings.Contains(err.Error(), "compat_1.99.go") {
		t.Errorf("a minor without a compat file: %v", err)
	}
}

// TestProgramBuildsAreReproducible builds pause twice into two caches: the
// binaries and so the layers are the same bytes, and a second build into
// the same cache does nothing.
func TestProgramBuildsAreReproducible(t *testing.T) {
	src, _ := filepath.Abs(filepath.Join("..", ".."))
	ctx := context.Background()

	var layers []*layer

	for range 2 {
		var log bytes.Buffer

		b := &builder{opts: Options{Out: t.TempDir(), Cache: t.TempDir(), Src: src, Go: "go", Log: &log}, goVersion: runtime.Version()}
		if err := os.MkdirAll(filepath.Join(b.opts.Cache, "build"), 0o755); err != nil {
			t.Fatal(err)
		}

		p := b.programs()["pause"]

		dir, err := b.build(ctx, p)
		if err != nil {
			t.Fatal(err)
		}

		if _, err := b.build(ctx, p); err != nil {
			t.Fatal(err)
		}

		if b.res.Built != 1 || b.res.Cached != 1 || !strings.Contains(log.String(), "up to date") {
			t.Errorf("built %d, cached %d:\n%s", b.res.Built, b.res.Cached, log.String())
		}

		l, err := b.makeLayer("pause", []entry{{path: "/pause", src: filepath.Join(dir, "pause"), mode: 0o755}})
		if err != nil {
			t.Fatal(err)
		}

		layers = append(layers, l)

		// A fresh clone (another output directory) with the same cache
		// builds nothing.
		fresh := &builder{opts: Options{Out: t.TempDir(), Cache: b.opts.Cache, Src: src, Go: "go", Log: &log}, goVersion: runtime.Version()}
		if again, err := fresh.build(ctx, p); err != nil || again != dir || fresh.res.Built != 0 || fresh.res.Cached != 1 {
			t.Errorf("a fresh output dir with the same cache: %s (%v), built %d, cached %d; want %s from the cache", again, err, fresh.res.Built, fresh.res.Cached, dir)
		}

		if l2, err := fresh.makeLayer("pause", []entry{{path: "/pause", src: filepath.Join(dir, "pause"), mode: 0o755}}); err != nil || l2.file != l.file {
			t.Errorf("the layer was not found in the cache: %v %+v", err, l2)
		}
	}

	if layers[0].Digest != layers[1].Digest || layers[0].DiffID != layers[1].DiffID {
		t.Errorf("two builds of pause: %s and %s", layers[0].Digest, layers[1].Digest)
	}
}

// TestSupersededBuildsAreRemoved: a build under a new key (the sources
// changed) removes the same program's older output.
func TestSupersededBuildsAreRemoved(t *testing.T) {
	src, _ := filepath.Abs(filepath.Join("..", ".."))
	b := &builder{opts: Options{Out: t.TempDir(), Cache: t.TempDir(), Src: src, Go: "go"}, goVersion: runtime.Version()}

	stale := filepath.Join(b.opts.Cache, "build", "pause-"+images.Pause+"-000000000000")
	other := filepath.Join(b.opts.Cache, "build", "coredns-v1.0.0-000000000000")

	for _, d := range []string{stale, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	dir, err := b.build(context.Background(), b.programs()["pause"])
	if err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the superseded pause build is still there: %v", err)
	}

	if _, err := os.Stat(other); err != nil {
		t.Errorf("another program's build was removed: %v", err)
	}

	if !complete(dir) {
		t.Error("the new build is not complete")
	}
}

func TestBuildRefusesUnknownVersions(t *testing.T) {
	for _, v := range []string{"1.99.0", "latest", "v1.34"} {
		_, err := Build(context.Background(), Options{Out: t.TempDir(), Kubernetes: []string{v}})
		if err == nil || !(strings.Contains(err.Error(), "not pinned") || strings.Contains(err.Error(), "MAJOR.MINOR.PATCH")) {
			t.Errorf("%s: %v", v, err)
		}
	}

	if _, err := Build(context.Background(), Options{Out: t.TempDir(), Src: t.TempDir(), Kubernetes: []string{images.Kubernetes}}); err == nil || !strings.Contains(err.Error(), "source tree") {
		t.Errorf("no source tree: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (Debian's netbase has it)", err)
	}

	return string(b)
}

// protocolNumbers reads /etc/protocols: name -> number.
func protocolNumbers(t *testing.T, text string) map[string]string {
	t.Helper()

	out := map[string]string{}

	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) >= 2 {
			out[f[0]] = f[1]
		}
	}

	return out
}

// TestGinkgoMatchesKubernetes: the ginkgo CLI that runs e2e.test in
// parallel must speak the protocol of the Ginkgo linked into it, the one
// the default Kubernetes version's go.mod requires.
func TestGinkgoMatchesKubernetes(t *testing.T) {
	src, _ := filepath.Abs(filepath.Join("..", ".."))
	b := &builder{opts: Options{Out: t.TempDir(), Cache: t.TempDir(), Src: src, Go: "go"}}

	info, err := b.download(t.Context(), "k8s.io/kubernetes", "v"+images.Kubernetes)
	if err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(info.GoMod)
	if err != nil {
		t.Fatal(err)
	}

	f, err := modfile.Parse(info.GoMod, data, nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, r := range f.Require {
		if r.Mod.Path == "github.com/onsi/ginkgo/v2" {
			if r.Mod.Version != "v"+images.Ginkgo {
				t.Fatalf("Kubernetes %s requires ginkgo %s; images.Ginkgo is %s", images.Kubernetes, r.Mod.Version, images.Ginkgo)
			}

			return
		}
	}

	t.Fatalf("Kubernetes %s's go.mod requires no github.com/onsi/ginkgo/v2", images.Kubernetes)
}
