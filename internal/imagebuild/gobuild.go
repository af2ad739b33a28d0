package imagebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
)

// program is one set of binaries built from Go source.
type program struct {
	name    string // output directory prefix: "kubernetes", "coredns", ...
	version string // with its leading v

	// One of three sources: a module at a version (go install), packages
	// of talosbox's own module (./images/pause), or the generated
	// Kubernetes wrapper module.
	module string
	pkgs   []string
	local  []string
	kube   bool
	// test, with kube, builds this package's test binary (go test -c)
	// instead of the components: e2e.test. pkgs, with kube, builds these
	// main packages of k8s.io/kubernetes instead (agnhost).
	test string
	// wrap builds a module's pkgs from a generated module that requires
	// it, for modules whose go.mod replaces siblings by local paths (etcd,
	// the sample API server), which go install refuses.
	wrap bool

	// cgo links C code in, statically, with the pure-Go resolver and
	// user lookups (flanneld's UDP backend is C, as upstream builds it).
	cgo bool
	// tags are extra build tags (runc's seccomp).
	tags []string

	ldflags func(info moduleInfo) []string
}

// moduleInfo is what the module proxy says of a release; its time and
// commit stamp the binaries, so a rebuild is byte-identical.
type moduleInfo struct {
	Dir, GoMod, Info string
	Time             time.Time
	Commit           string
}

func (b *builder) download(ctx context.Context, mod, version string) (moduleInfo, error) {
	out, err := b.goCmd(ctx, "", "mod", "download", "-json", mod+"@"+version).Output()
	if err != nil {
		return moduleInfo{}, fmt.Errorf("download %s@%s: %w", mod, version, exitDetail(err))
	}

	var mi moduleInfo
	if err := json.Unmarshal(out, &mi); err != nil {
		return mi, fmt.Errorf("download %s@%s: %w", mod, version, err)
	}

	info, err := os.ReadFile(mi.Info)
	if err != nil {
		return mi, err
	}

	var v struct {
		Time   time.Time
		Origin struct{ Hash string }
	}
	if err := json.Unmarshal(info, &v); err != nil {
		return mi, fmt.Errorf("%s: %w", mi.Info, err)
	}

	mi.Time, mi.Commit = v.Time.UTC(), v.Origin.Hash

	return mi, nil
}

// build makes p's binaries, or finds them from an earlier build with the
// same key, and returns their directory.
func (b *builder) build(ctx context.Context, p program) (string, error) {
	var (
		k    key
		info moduleInfo
		err  error
	)

	k.add("program", p.name, p.version, b.goVersion, strings.Join(p.pkgs, " "), strings.Join(p.local, " "))

	if p.test != "" {
		// Only then: the other programs keep the keys of earlier builds.
		k.add("test", p.test)
	}

	switch {
	case p.kube:
		if info, err = b.download(ctx, "k8s.io/kubernetes", p.version); err != nil {
			return "", err
		}

		k.add(info.Info, info.Time.String(), info.Commit)

		files, err := kubeSources(b.opts.Src, p.version)
		if err != nil {
			return "", err
		}

		for _, name := range slices.Sorted(maps.Keys(files)) {
			k.add(name)

			if err := k.addFile(filepath.Join(b.opts.Src, "images", "kubernetes", files[name])); err != nil {
				return "", err
			}
		}
	case p.module != "":
		if info, err = b.download(ctx, p.module, p.version); err != nil {
			return "", err
		}

		k.add(p.module, info.Time.String(), info.Commit)

		if p.wrap {
			k.add("wrap")
		}
	default:
		for _, f := range []string{"go.mod", "go.sum"} {
			if err := k.addFile(filepath.Join(b.opts.Src, f)); err != nil {
				return "", err
			}
		}

		for _, pkg := range p.local {
			if err := k.addDir(filepath.Join(b.opts.Src, pkg)); err != nil {
				return "", err
			}
		}
	}

	ldflags := append([]string{"-s", "-w"}, p.ldflags(info)...)
	if p.cgo {
		ldflags = append(ldflags, "-extldflags=-static")
	}

	k.add(ldflags...)
	k.add(fmt.Sprint("cgo", p.cgo), "tags", strings.Join(p.tags, ","))

	dir := filepath.Join(b.opts.Cache, "build", p.name+"-"+p.version+"-"+k.String()[:12])
	if complete(dir) {
		b.logf("%s %s: up to date (%s)", p.name, p.version, dir)
		b.res.Cached++

		return dir, nil
	}

	hint := ""
	if p.test != "" {
		hint = " (a first build takes about 15 minutes on 2 cores)"
	} else if p.kube {
		hint = " (a first build, with Go's build cache empty, takes about 10 minutes on 2 cores)"
	}

	b.logf("%s %s: building%s", p.name, p.version, hint)

	start := time.Now()

	tmp, err := os.MkdirTemp(filepath.Join(b.opts.Cache, "build"), ".tmp-"+p.name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)

	ld := "-ldflags=" + strings.Join(ldflags, " ")

	var cmd *exec.Cmd

	switch {
	case p.kube:
		src, err := b.kubeModule(p.version, info)
		if err != nil {
			return "", err
		}

		cmd = b.goCmd(ctx, src, "build", "-mod=mod", ld, "-o", filepath.Join(tmp, "kubernetes"), ".")

		switch {
		case p.test != "":
			// Upstream's tags for e2e.test (hack/lib/golang.sh): no
			// test-only code paths, no gRPC tracing.
			cmd = b.goCmd(ctx, src, "test", "-c", "-mod=mod", "-tags="+strings.Join(p.tags, ","), ld, "-o", filepath.Join(tmp, path.Base(p.test)+".test"), p.test)
		case len(p.pkgs) > 0:
			cmd = b.goCmd(ctx, src, append([]string{"build", "-mod=mod", ld, "-o", tmp + "/"}, p.pkgs...)...)
		}
	case p.wrap:
		src, err := b.wrapModule(p, info)
		if err != nil {
			return "", err
		}

		cmd = b.goCmd(ctx, src, append([]string{"build", "-mod=mod", ld, "-o", tmp + "/"}, p.pkgs...)...)
	case p.module != "":
		args := []string{"install", ld}
		for _, pkg := range p.pkgs {
			args = append(args, pkg+"@"+p.version)
		}

		if p.cgo {
			tags := append([]string{"netgo", "osusergo"}, p.tags...)
			args = append(args[:2:2], append([]string{"-tags=" + strings.Join(tags, ",")}, args[2:]...)...)
		}

		cmd = b.goCmd(ctx, "", args...)
		cmd.Env = append(cmd.Env, "GOBIN="+tmp)

		if p.cgo {
			cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
		}
	default:
		args := []string{"build", ld, "-o", tmp + "/"}
		for _, pkg := range p.local {
			args = append(args, "./"+pkg)
		}

		cmd = b.goCmd(ctx, b.opts.Src, args...)
	}

	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s %s: %w\n%s", p.name, p.version, err, tail(out, 40))
	}

	if err := finish(tmp, dir); err != nil {
		return "", err
	}

	// Builds of the same program and version under an older key are
	// superseded; without this every source edit would leave one behind.
	old, _ := filepath.Glob(filepath.Join(b.opts.Cache, "build", p.name+"-"+p.version+"-*"))
	for _, o := range old {
		if o != dir {
			_ = os.RemoveAll(o)
		}
	}

	b.logf("%s %s: built in %s", p.name, p.version, time.Since(start).Round(time.Second))
	b.res.Built++

	return dir, nil
}

// goCmd runs the go tool for a static, reproducible build that never
// fetches another toolchain. dir "" runs it in a scratch directory, so
// `go install pkg@version` sees no module of ours.
func (b *builder) goCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.opts.Go, args...)
	if dir == "" {
		dir = os.TempDir()
	}

	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath -buildvcs=false", "GOTOOLCHAIN=local", "GOWORK=off")

	return cmd
}

// kubeModule writes the wrapper module that builds images/kubernetes
// against k8s.io/kubernetes at version: upstream's go.mod pins every
// dependency (copied whole, or the resolver picks newer modules that do
// not build) and replaces the staging modules with local paths, which
// become the published k8s.io/* v0.MINOR.PATCH releases here.
func (b *builder) kubeModule(version string, info moduleInfo) (string, error) {
	up, err := parseGoMod(info)
	if err != nil {
		return "", err
	}

	staging := "v0" + strings.TrimPrefix(version, "v1")

	var f modfile.File

	f.AddModuleStmt("talosbox.local/kubernetes")

	if up.Go != nil {
		if err := f.AddGoStmt(up.Go.Version); err != nil {
			return "", err
		}
	}

	for _, g := range up.Godebug {
		if err := f.AddGodebug(g.Key, g.Value); err != nil {
			return "", err
		}
	}

	f.AddNewRequire("k8s.io/kubernetes", version, false)

	for _, r := range up.Require {
		f.AddNewRequire(r.Mod.Path, r.Mod.Version, r.Indirect)
	}

	for _, r := range up.Replace {
		if !strings.HasPrefix(r.New.Path, "./staging/") {
			return "", fmt.Errorf("%s: unexpected replace %s => %s", info.GoMod, r.Old.Path, r.New.Path)
		}

		if err := f.AddReplace(r.Old.Path, "", r.Old.Path, staging); err != nil {
			return "", err
		}
	}

	f.Cleanup()

	out, err := f.Format()
	if err != nil {
		return "", err
	}

	srcs := map[string][]byte{}

	files, err := kubeSources(b.opts.Src, version)
	if err != nil {
		return "", err
	}

	for name, from := range files {
		data, err := os.ReadFile(filepath.Join(b.opts.Src, "images", "kubernetes", from))
		if errors.Is(err, fs.ErrNotExist) && name == "compat.go" {
			return "", fmt.Errorf("no images/kubernetes/%s: Kubernetes %s needs one (the API main.go uses differs between minors)", from, version)
		}

		if err != nil {
			return "", err
		}

		srcs[name] = bytes.Replace(data, []byte("//go:build ignore\n"), nil, 1)
	}

	dir := filepath.Join(b.opts.Cache, "src", "kubernetes-"+version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}

	header := []byte("// Generated by internal/imagebuild from k8s.io/kubernetes@" + version + "'s go.mod. DO NOT EDIT.\n\n")

	if err := writeIfChanged(filepath.Join(dir, "go.mod"), append(header, out...)); err != nil {
		return "", err
	}

	for name, data := range srcs {
		if err := writeIfChanged(filepath.Join(dir, name), data); err != nil {
			return "", err
		}
	}

	return dir, nil
}

// kubeSources are the files of images/kubernetes the wrapper module is
// made of, by their name there: every Go file but the compat_<minor>.go
// of other minors, and this minor's as compat.go.
func kubeSources(src, version string) (map[string]string, error) {
	entries, err := os.ReadDir(filepath.Join(src, "images", "kubernetes"))
	if err != nil {
		return nil, err
	}

	files := map[string]string{"compat.go": kubeCompatFile(version)}

	for _, e := range entries {
		if name := e.Name(); !e.IsDir() && path.Ext(name) == ".go" && !strings.HasPrefix(name, "compat_") {
			files[name] = name
		}
	}

	return files, nil
}

// wrapModule writes a module that requires p's module at its version with
// that module's own requirements, so its main packages build as upstream
// pins them. Replaces by version are kept; replaces by local path (a
// sibling module of the same repository, or a guard against a bad
// import) are dropped: the requirement already names the sibling's
// release.
func (b *builder) wrapModule(p program, info moduleInfo) (string, error) {
	up, err := parseGoMod(info)
	if err != nil {
		return "", err
	}

	var f modfile.File

	f.AddModuleStmt("talosbox.local/" + p.name)

	if up.Go != nil {
		if err := f.AddGoStmt(up.Go.Version); err != nil {
			return "", err
		}
	}

	f.AddNewRequire(p.module, p.version, false)

	for _, r := range up.Require {
		f.AddNewRequire(r.Mod.Path, r.Mod.Version, r.Indirect)
	}

	for _, r := range up.Replace {
		if modfile.IsDirectoryPath(r.New.Path) {
			continue
		}

		if err := f.AddReplace(r.Old.Path, r.Old.Version, r.New.Path, r.New.Version); err != nil {
			return "", err
		}
	}

	f.Cleanup()

	out, err := f.Format()
	if err != nil {
		return "", err
	}

	dir := filepath.Join(b.opts.Cache, "src", p.name+"-"+p.version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}

	header := []byte("// Generated by internal/imagebuild from " + p.module + "@" + p.version + "'s go.mod. DO NOT EDIT.\n\n")

	return dir, writeIfChanged(filepath.Join(dir, "go.mod"), append(header, out...))
}

// parseGoMod reads the go.mod of a downloaded module release.
func parseGoMod(info moduleInfo) (*modfile.File, error) {
	data, err := os.ReadFile(info.GoMod)
	if err != nil {
		return nil, err
	}

	f, err := modfile.Parse(info.GoMod, data, nil)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", info.GoMod, err)
	}

	return f, nil
}

// kubeCompatFile is the file of images/kubernetes for a version's minor
// ("v1.33.13" → compat_1.33.go).
func kubeCompatFile(version string) string {
	v := strings.TrimPrefix(version, "v")
	if i := strings.LastIndexByte(v, '.'); i > 0 {
		v = v[:i]
	}

	return "compat_" + v + ".go"
}

// kubeLdflags stamps the release into component-base and client-go, as
// upstream's hack/lib/version.sh does; without it every component reports
// v0.0.0-master and version skew checks fail.
func kubeLdflags(version string) func(moduleInfo) []string {
	return func(info moduleInfo) []string {
		parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)

		var flags []string

		for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
			flags = append(flags,
				"-X", pkg+".gitVersion="+version,
				"-X", pkg+".gitMajor="+parts[0],
				"-X", pkg+".gitMinor="+parts[1],
				"-X", pkg+".gitCommit="+info.Commit,
				"-X", pkg+".gitTreeState=clean",
				"-X", pkg+".buildDate="+info.Time.Format(time.RFC3339))
		}

		return flags
	}
}

func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}

	return os.WriteFile(path, data, 0o644)
}

func exitDetail(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}

	return err
}

// tail keeps the last n lines of a build log for an error message.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}

	return strings.Join(lines, "\n")
}
