package initramfs

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Modules is an unpacked kernel's module tree, lib/modules/<release>: for
// example from `dpkg-deb -x` of a Debian kernel package, which ships no
// modules.dep. Dependencies come from each module's .modinfo "depends="
// field, which is what depmod reads too.
type Modules struct {
	// Dir is the tree's root: it holds kernel/ and modules.builtin.
	Dir string
	// Release is the kernel release (the directory's name, uname -r).
	Release string

	byName  map[string]string // canonical name -> path relative to Dir
	builtin map[string]bool
	deps    map[string][]string // relative path -> dependency names (cache)
	aliases map[string][]string // relative path -> modinfo aliases (cache)
}

// canonical is the kernel's name for a module: "-" and "_" are the same.
func canonical(name string) string { return strings.ReplaceAll(name, "-", "_") }

// moduleName turns "kernel/net/8021q/8021q.ko" into "8021q".
func moduleName(p string) string {
	base := path.Base(p)
	if i := strings.Index(base, ".ko"); i > 0 {
		base = base[:i]
	}

	return canonical(base)
}

// OpenModules indexes the module tree dir (lib/modules/<release>).
func OpenModules(dir string) (*Modules, error) {
	m := &Modules{Dir: dir, Release: filepath.Base(dir), byName: map[string]string{}, builtin: map[string]bool{}, deps: map[string][]string{}, aliases: map[string][]string{}}

	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		if d.IsDir() || !strings.Contains(d.Name(), ".ko") {
			return nil
		}

		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}

		m.byName[moduleName(rel)] = filepath.ToSlash(rel)

		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index kernel modules: %w", err)
	}

	if len(m.byName) == 0 {
		return nil, fmt.Errorf("index kernel modules: no modules under %s", dir)
	}

	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				m.builtin[moduleName(l)] = true
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read builtin modules: %w", err)
	}

	return m, nil
}

// Builtin reports whether the kernel has the module compiled in.
func (m *Modules) Builtin(name string) bool { return m.builtin[canonical(name)] }

// Path returns a module's file, relative to Dir.
func (m *Modules) Path(name string) (string, bool) {
	p, ok := m.byName[canonical(name)]
	return p, ok
}

// Files lists every module file of the tree, relative to Dir, sorted.
func (m *Modules) Files() []string {
	files := make([]string, 0, len(m.byName))
	for _, rel := range m.byName {
		files = append(files, rel)
	}

	slices.Sort(files)

	return files
}

// WriteDepFile writes Dir/modules.dep for the whole tree, so that kmod
// (and modprobe) can load from the unpacked kernel package directly; a
// .deb ships none and depmod would need the kmod package. It replaces the
// file atomically and returns the number of modules listed.
func (m *Modules) WriteDepFile() (int, error) {
	files := m.Files()

	dep, err := m.DepFile(files)
	if err != nil {
		return 0, fmt.Errorf("modules.dep for %s: %w", m.Dir, err)
	}

	if err := writeFileAtomic(filepath.Join(m.Dir, "modules.dep"), 0o644, func(f *os.File) error {
		_, err := f.Write(dep)
		return err
	}); err != nil {
		return 0, err
	}

	return len(files), nil
}

// depends reads the direct dependencies of the module at rel.
func (m *Modules) depends(rel string) ([]string, error) {
	if _, ok := m.deps[rel]; !ok {
		if err := m.modinfo(rel); err != nil {
			return nil, err
		}
	}

	return m.deps[rel], nil
}

// Aliases reads the names the kernel may ask for the module at rel by
// (its .modinfo "alias=" fields: "fs-nfs4", "pci:v00001AF4d*"...).
func (m *Modules) Aliases(rel string) ([]string, error) {
	if _, ok := m.deps[rel]; !ok {
		if err := m.modinfo(rel); err != nil {
			return nil, err
		}
	}

	return m.aliases[rel], nil
}

// modinfo reads and caches the dependencies and aliases of rel.
func (m *Modules) modinfo(rel string) error {
	if !strings.HasSuffix(rel, ".ko") {
		return fmt.Errorf("module %s is compressed: only plain .ko files are supported", rel)
	}

	f, err := elf.Open(filepath.Join(m.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("module %s: %w", rel, err)
	}
	defer f.Close()

	sec := f.Section(".modinfo")
	if sec == nil {
		return fmt.Errorf("module %s has no .modinfo section", rel)
	}

	data, err := sec.Data()
	if err != nil {
		return fmt.Errorf("module %s: .modinfo: %w", rel, err)
	}

	deps, aliases := []string{}, []string(nil)

	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			for _, d := range strings.Split(string(v), ",") {
				if d = strings.TrimSpace(d); d != "" {
					deps = append(deps, canonical(d))
				}
			}
		}

		if v, ok := bytes.CutPrefix(kv, []byte("alias=")); ok && len(v) > 0 {
			aliases = append(aliases, string(v))
		}
	}

	m.deps[rel], m.aliases[rel] = deps, aliases

	return nil
}

// Resolve returns the files of the named modules and of everything they
// depend on, relative to Dir, each after its dependencies (the order to
// load them in). Built-in modules are left out; an unknown name is an
// error.
func (m *Modules) Resolve(names ...string) ([]string, error) {
	var (
		out   []string
		state = map[string]int{} // 1: on the current chain, 2: placed
		visit func(name string, chain []string) error
	)

	visit = func(name string, chain []string) error {
		name = canonical(name)
		chain = append(chain, name)

		switch {
		case state[name] == 2:
			return nil
		case state[name] == 1:
			return fmt.Errorf("module dependency cycle: %s", strings.Join(chain, " -> "))
		case m.builtin[name]:
			state[name] = 2
			return nil
		}

		rel, ok := m.byName[name]
		if !ok {
			return fmt.Errorf("kernel %s has no module %q (needed by %s)", m.Release, name, strings.Join(chain, " <- "))
		}

		state[name] = 1

		deps, err := m.depends(rel)
		if err != nil {
			return err
		}

		for _, d := range deps {
			if err := visit(d, chain); err != nil {
				return err
			}
		}

		state[name] = 2
		out = append(out, rel)

		return nil
	}

	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}

	return out, nil
}

// DepFile renders modules.dep for the given module files (as Resolve
// returns them), in depmod's format: "path:dep dep", each line listing a
// module's whole dependency closure, nearest first. There is no space
// after the colon: u-root's parser misreads one.
func (m *Modules) DepFile(rels []string) ([]byte, error) {
	var b bytes.Buffer

	for _, rel := range rels {
		name := moduleName(rel)

		closure, err := m.Resolve(name)
		if err != nil {
			return nil, err
		}

		// Resolve puts dependencies first and the module last; depmod
		// lists the module's dependencies with the deepest last.
		closure = closure[:len(closure)-1]
		slices.Reverse(closure)

		fmt.Fprintf(&b, "%s:%s\n", rel, strings.Join(closure, " "))
	}

	return b.Bytes(), nil
}

// Modules adds the named kernel modules and their dependencies under
// lib/modules/<release>/, with a modules.dep covering them and the
// kernel's modules.builtin, so that internal/kmod (or modprobe) can load
// them by name in the guest. It returns the added module files in load
// order.
func (a *Archive) Modules(m *Modules, names ...string) ([]string, error) {
	rels, err := m.Resolve(names...)
	if err != nil {
		return nil, err
	}

	base := path.Join("lib/modules", m.Release)

	// A second call must see the modules of the first in modules.dep.
	all := slices.Clone(rels)

	for name, e := range a.entries {
		if rel, ok := strings.CutPrefix(name, base+"/"); ok && e.src != "" && strings.Contains(path.Base(rel), ".ko") && !slices.Contains(all, rel) {
			all = append(all, rel)
		}
	}

	slices.Sort(all)

	for _, rel := range rels {
		if err := a.File(path.Join(base, rel), filepath.Join(m.Dir, filepath.FromSlash(rel)), 0o644); err != nil {
			return nil, err
		}
	}

	dep, err := m.DepFile(all)
	if err != nil {
		return nil, err
	}

	a.Bytes(path.Join(base, "modules.dep"), dep, 0o644)

	if b, err := os.ReadFile(filepath.Join(m.Dir, "modules.builtin")); err == nil {
		a.Bytes(path.Join(base, "modules.builtin"), b, 0o644)
	}

	return rels, nil
}

// moduleIndexes writes, beside modules.dep, modules.boot (the names of
// the boot modules, one per line, in load order: what a node loads at
// boot, the rest of modules.dep waiting to be asked for) and
// modules.alias in depmod's format ("alias <pattern> <module>") for every
// module the archive carries, which /sbin/modprobe resolves the names
// the kernel asks for with.
func (a *Archive) moduleIndexes(m *Modules, boot []string) error {
	base := path.Join("lib/modules", m.Release)

	var names bytes.Buffer
	for _, rel := range boot {
		fmt.Fprintln(&names, moduleName(rel))
	}

	a.Bytes(path.Join(base, "modules.boot"), names.Bytes(), 0o644)

	var carried []string

	for name, e := range a.entries {
		if rel, ok := strings.CutPrefix(name, base+"/"); ok && e.src != "" && strings.Contains(path.Base(rel), ".ko") {
			carried = append(carried, rel)
		}
	}

	slices.Sort(carried)

	var aliases bytes.Buffer

	for _, rel := range carried {
		as, err := m.Aliases(rel)
		if err != nil {
			return err
		}

		for _, alias := range as {
			fmt.Fprintf(&aliases, "alias %s %s\n", alias, moduleName(rel))
		}
	}

	a.Bytes(path.Join(base, "modules.alias"), aliases.Bytes(), 0o644)

	return nil
}
