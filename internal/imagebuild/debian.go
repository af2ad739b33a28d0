package imagebuild

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// scriptOnly are packages other packages depend on only for their
// maintainer scripts (debconf questions, adduser, update-rc.d) or for
// helper scripts an image never runs (apache2's a2enmod is Perl,
// nfs-common's mountstats and nfsiostat are Python). No
// script runs when an image is assembled, so they stay out of it.
var scriptOnly = map[string]bool{
	"debconf": true, "cdebconf": true, "perl": true, "perl-base": true, "perl-modules-5.36": true,
	"libperl5.36": true, "adduser": true, "passwd": true, "init-system-helpers": true,
	"lsb-base": true, "sysvinit-utils": true, "dpkg": true, "install-info": true, "ucf": true,
	"python3": true,
}

// debPackage is one package of a closure as apt names it.
type debPackage struct {
	Name, Version, SHA256 string
}

// parseDepends reads `apt-cache depends` output: for each package, the
// packages its Depends and Pre-Depends name, picking the first
// alternative that is a real package and the first provider of a virtual
// one, as apt itself would when nothing else is installed.
func parseDepends(out []byte) map[string][]string {
	deps := map[string][]string{}

	var (
		cur   string
		group []string // the candidates of one dependency, in order
		want  bool     // the last line opened a dependency whose providers follow
	)

	flush := func() {
		if cur != "" && len(group) > 0 {
			deps[cur] = append(deps[cur], group[0])
		}

		group = nil
	}

	inGroup := false

	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()

		switch {
		case line == "":
			continue
		case !strings.HasPrefix(line, " "):
			if !inGroup {
				flush()
			}

			inGroup, want = false, false
			cur = strings.TrimSpace(line)
			if _, ok := deps[cur]; !ok {
				deps[cur] = nil // a package with no dependencies is still known
			}
		case strings.HasPrefix(line, "    "):
			// A provider of the virtual package just named.
			if want {
				group = append(group, pkgName(strings.TrimSpace(line)))
			}
		default:
			field, target, ok := strings.Cut(strings.TrimSpace(line), ": ")
			alt := strings.HasPrefix(field, "|")
			field = strings.TrimPrefix(field, "|")

			if !ok || (field != "Depends" && field != "PreDepends") {
				want = false

				continue
			}

			if !inGroup {
				flush()
			}

			inGroup = alt
			want = strings.HasPrefix(target, "<")

			if !want {
				group = append(group, pkgName(target))
			}
		}
	}

	flush()

	return deps
}

// pkgName drops an architecture qualifier (perl:any, libc6:amd64).
func pkgName(s string) string {
	name, _, _ := strings.Cut(s, ":")

	return name
}

// closure is the set of packages roots need, without scriptOnly ones.
func (b *builder) closure(ctx context.Context, roots []string) ([]string, error) {
	seen := map[string]bool{}
	next := slices.Clone(roots)

	for len(next) > 0 {
		var ask []string

		for _, p := range next {
			if !seen[p] && !scriptOnly[p] {
				seen[p] = true
				ask = append(ask, p)
			}
		}

		next = nil

		if len(ask) == 0 {
			break
		}

		args := append([]string{"depends", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"}, ask...)

		out, err := exec.CommandContext(ctx, "apt-cache", args...).Output()
		if err != nil {
			return nil, fmt.Errorf("apt-cache depends %s: %w", strings.Join(ask, " "), exitDetail(err))
		}

		for _, ds := range parseDepends(out) {
			next = append(next, ds...)
		}
	}

	return slices.Sorted(func(yield func(string) bool) {
		for p := range seen {
			if !yield(p) {
				return
			}
		}
	}), nil
}

// candidates says which version of each package apt would fetch, with
// the archive's checksum, so the unpacked root is keyed by exactly what
// goes in it.
func candidates(ctx context.Context, names []string) ([]debPackage, error) {
	args := append([]string{"show", "--no-all-versions"}, names...)

	out, err := exec.CommandContext(ctx, "apt-cache", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache show: %w", exitDetail(err))
	}

	var (
		pkgs []debPackage
		cur  debPackage
	)

	for _, stanza := range strings.Split(string(out), "\n\n") {
		cur = debPackage{}

		for _, line := range strings.Split(stanza, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "Package":
				cur.Name = v
			case "Version":
				cur.Version = v
			case "SHA256":
				cur.SHA256 = v
			}
		}

		if cur.Name != "" {
			pkgs = append(pkgs, cur)
		}
	}

	if len(pkgs) != len(names) {
		return nil, fmt.Errorf("apt-cache show: %d packages asked, %d described (run apt-get update?)", len(names), len(pkgs))
	}

	return pkgs, nil
}

// debRoot unpacks Debian's packages roots, with everything they depend
// on, into a directory keyed by their names, versions and checksums, and
// returns the root. The archives come from the machine's apt sources with
// apt-get download: nothing is installed on the machine and no
// maintainer script runs.
func (b *builder) debRoot(ctx context.Context, name string, roots []string) (string, []debPackage, error) {
	names, err := b.closure(ctx, roots)
	if err != nil {
		return "", nil, fmt.Errorf("debian root %s: %w", name, err)
	}

	pkgs, err := candidates(ctx, names)
	if err != nil {
		return "", nil, fmt.Errorf("debian root %s: %w", name, err)
	}

	var k key

	k.add("debroot", name)

	for _, p := range pkgs {
		k.add(p.Name, p.Version, p.SHA256)
	}

	dir := filepath.Join(b.opts.Cache, "debian", name+"-"+k.String()[:12])
	if complete(dir) {
		b.logf("debian %s: up to date (%d packages)", name, len(pkgs))

		return filepath.Join(dir, "root"), pkgs, nil
	}

	start := time.Now()

	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", nil, err
	}

	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)

	debs := filepath.Join(tmp, "debs")
	if err := os.Mkdir(debs, 0o755); err != nil {
		return "", nil, err
	}

	args := []string{"download"}
	for _, p := range pkgs {
		args = append(args, p.Name+"="+p.Version)
	}

	dl := exec.CommandContext(ctx, "apt-get", args...)
	dl.Dir = debs

	if out, err := dl.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("debian root %s: apt-get download: %w\n%s", name, err, tail(out, 10))
	}

	root := filepath.Join(tmp, "root")

	files, err := filepath.Glob(filepath.Join(debs, "*.deb"))
	if err != nil {
		return "", nil, err
	}

	for _, f := range files {
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", f, root).CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("debian root %s: dpkg-deb -x %s: %w: %s", name, filepath.Base(f), err, out)
		}
	}

	if err := os.RemoveAll(debs); err != nil {
		return "", nil, err
	}

	if err := finish(tmp, dir); err != nil {
		return "", nil, err
	}

	old, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), name+"-*"))
	for _, o := range old {
		if o != dir {
			_ = os.RemoveAll(o)
		}
	}

	b.logf("debian %s: %d packages unpacked in %s", name, len(pkgs), time.Since(start).Round(time.Second))

	return filepath.Join(dir, "root"), pkgs, nil
}

// noImage are the parts of a Debian root no image needs: documentation,
// manuals, translations and the packaging's own notes.
var noImage = []string{"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian", "usr/share/bug", "etc/init.d", "etc/logrotate.d", "lib/systemd", "usr/lib/systemd"}

// treeEntries lists what is under dir (a Debian root from debRoot) as
// layer entries at the same paths, with their permission and set-id bits.
func treeEntries(dir string) ([]entry, error) {
	var out []entry

	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}

		if slices.Contains(noImage, rel) {
			return filepath.SkipDir
		}

		info, err := d.Info()
		if err != nil {
			return err
		}

		e := entry{path: "/" + filepath.ToSlash(rel), mode: unixMode(info.Mode())}

		switch {
		case d.IsDir():
			e.dir = true
		case info.Mode()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			e.src = p
		default:
			return nil // no device nodes or pipes in a package
		}

		out = append(out, e)

		return nil
	})

	return out, err
}

// unixMode is m's permission and set-id bits as a tar header holds them.
func unixMode(m fs.FileMode) os.FileMode {
	u := m.Perm()
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}

	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}

	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}

	return u
}
