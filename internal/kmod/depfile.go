package kmod

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// depIndex is what modules.dep and modules.builtin say about a kernel.
type depIndex struct {
	dir string
	// deps maps a module's path, as written in modules.dep, to the paths
	// of its dependencies in the file's order.
	deps map[string][]string
	// byName maps a canonical module name to its path.
	byName map[string]string
	// builtin holds the canonical names of modules compiled into the kernel.
	builtin map[string]bool
}

// canonical is the name the kernel gives a module: file names mix "-"
// and "_" freely, the kernel always reports "_".
func canonical(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}

// moduleName turns "kernel/fs/xfs/xfs.ko.xz" into "xfs".
func moduleName(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, ".ko"); i > 0 {
		base = base[:i]
	}

	return canonical(base)
}

// parseDeps reads modules.dep. Each line is "path: dep dep ...". depmod
// writes no space after the colon when there are no dependencies, but
// hand-written files and some generators do, and u-root's parser then
// invents a dependency on the modules directory itself; here any run of
// whitespace separates fields.
func parseDeps(r io.Reader) (map[string][]string, error) {
	deps := map[string][]string{}
	sc := bufio.NewScanner(r)
	line := 0

	for sc.Scan() {
		line++

		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}

		mod, rest, ok := strings.Cut(text, ":")
		mod = strings.TrimSpace(mod)

		if !ok || mod == "" {
			return nil, fmt.Errorf("line %d: %q is not \"module: dependencies\"", line, text)
		}

		deps[mod] = strings.Fields(rest)
	}

	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}

	return deps, nil
}

// parseBuiltin reads modules.builtin: one module path per line.
func parseBuiltin(r io.Reader) (map[string]bool, error) {
	builtin := map[string]bool{}
	sc := bufio.NewScanner(r)

	for sc.Scan() {
		if p := strings.TrimSpace(sc.Text()); p != "" {
			builtin[moduleName(p)] = true
		}
	}

	return builtin, sc.Err()
}

func newIndex(dir string, deps map[string][]string, builtin map[string]bool) *depIndex {
	idx := &depIndex{dir: dir, deps: deps, byName: map[string]string{}, builtin: builtin}
	for p := range deps {
		idx.byName[moduleName(p)] = p
	}

	return idx
}

// loadIndex reads the index files of a modules directory. modules.builtin
// is optional: an unpacked kernel package may not carry one.
func loadIndex(dir string) (*depIndex, error) {
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("read module dependencies: %w", err)
	}
	defer f.Close()

	deps, err := parseDeps(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", f.Name(), err)
	}

	builtin := map[string]bool{}

	b, err := os.Open(filepath.Join(dir, "modules.builtin"))

	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read builtin modules: %w", err)
	default:
		defer b.Close()

		if builtin, err = parseBuiltin(b); err != nil {
			return nil, fmt.Errorf("parse %s: %w", b.Name(), err)
		}
	}

	return newIndex(dir, deps, builtin), nil
}

// abs makes a modules.dep path absolute; depmod writes them relative to
// the modules directory, very old versions wrote absolute paths.
func (idx *depIndex) abs(path string) string {
	if filepath.IsAbs(path) {
		return path
	}

	return filepath.Join(idx.dir, path)
}

// order returns the module at path and everything it needs, dependencies
// first. modules.dep lists a module's whole dependency closure with the
// deepest last, which is why modprobe loads the list back to front;
// walking it back to front and recursing into each entry gives that order
// and stays right for files that list only direct dependencies (as ones
// generated from .modinfo do).
func (idx *depIndex) order(path string) ([]string, error) {
	var (
		out   []string
		state = map[string]int{} // 1: on the current chain, 2: placed
		visit func(p string, chain []string) error
	)

	visit = func(p string, chain []string) error {
		chain = append(chain, moduleName(p))

		switch state[p] {
		case 1:
			return fmt.Errorf("dependency cycle: %s", strings.Join(chain, " -> "))
		case 2:
			return nil
		}

		state[p] = 1

		deps := idx.deps[p]
		for i := len(deps) - 1; i >= 0; i-- {
			if err := visit(deps[i], chain); err != nil {
				return err
			}
		}

		state[p] = 2
		out = append(out, p)

		return nil
	}

	if err := visit(path, nil); err != nil {
		return nil, err
	}

	return out, nil
}
