package kmod

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNotFound means no module of the image answers to a name.
var ErrNotFound = errors.New("module not found")

// Lookup names the modules that answer to name, as modprobe resolves what
// the kernel asks for (request_module: "fs-nfs4", "nfsv4",
// "net-pf-10"...): the module of that name in dir's modules.dep or
// modules.builtin, else every module whose modules.alias pattern (a shell
// glob, as depmod writes it from the modules' alias= fields) matches.
// "-" and "_" are the same character in both, as in kmod.
func Lookup(dir, name string) ([]string, error) {
	idx, err := loadIndex(dir)
	if err != nil {
		return nil, err
	}

	want := canonical(name)
	if _, ok := idx.byName[want]; ok || idx.builtin[want] {
		return []string{want}, nil
	}

	f, err := os.Open(filepath.Join(dir, "modules.alias"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w in %s", name, ErrNotFound, dir)
	}

	if err != nil {
		return nil, err
	}
	defer f.Close()

	var out []string

	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}

		if len(fields) != 3 || fields[0] != "alias" {
			return nil, fmt.Errorf("%s: line %d: %q is not \"alias PATTERN MODULE\"", f.Name(), line, sc.Text())
		}

		ok, err := path.Match(canonical(fields[1]), want)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: pattern %q: %w", f.Name(), line, fields[1], err)
		}

		if mod := canonical(fields[2]); ok && !slices.Contains(out, mod) {
			out = append(out, mod)
		}
	}

	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}

	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w in %s", name, ErrNotFound, dir)
	}

	return out, nil
}
